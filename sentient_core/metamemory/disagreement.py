"""Does new grounded evidence disagree with what memory predicted? A deterministic detector.

Given a question, memory's predicted passage and a new evidence passage,
:func:`detect_disagreement` looks for conflicting *values* — versions, dates,
CVE ids, numbers — next to the question's key terms, e.g. "jq ... fixed in
2.6.1" against "jq ... fixed in 2.7.0" for a question about jq's CVE.

Steps
    1. Anchors. The question's identifiers (``CVE-2024-11053``,
       ``7.88.1-10+deb12u14``, ``python3.11``: runs of word characters and ``.+~:-``
       with a digit or an underscore) are *strong* anchors: a passage must contain every one of them, and the
       places of the one it mentions least often are its focus. Without
       identifiers the question's content terms (frame words such as "version"
       or "date" dropped, idf-weighted when term stats are given) are *weak*
       anchors: the focus is where the largest weighted share of them occurs
       within :data:`SPAN` characters, and that share must reach
       :data:`MIN_COVERAGE`. A passage without a focus is not about the
       question: no disagreement.
    2. Values. Tokens with digits are classified (date, time, CVE id, version,
       number, bug reference) and grouped by *shape* (digits → ``9``, letters →
       ``a``: ``7.88.1-10+deb12u9`` and ``7.88.1-10+deb12u10`` share one), so only
       like is compared with like. The question's own identifiers are not
       values; the question's frame ("which version", "on which date", "how
       many") picks the value classes compared (all but times and bug
       references when it names none).
    3. Claims. For each shape both passages have, a passage's claim is its
       value nearest to its focus (within :data:`WINDOW` characters; ties go
       to the value before the focus).
    4. Conflict. The claims differ, and:
       * neither passage mentions the other's claim as close to its own focus
         (``max(|offset_a|, |offset_b|) + MARGIN``): otherwise the passages list
         the same values and only their nearest differs;
       * at least one claim lies where the other passage has text (its offset
         from the focus falls inside the other passage): a chunk that merely
         lacks the region holding the other's claim does not contradict it.

Magnitude
    ``s = anchor × kind × proximity`` in [0, 1]: ``anchor`` is 1 for strong
    anchors, else the smaller weighted coverage of the two passages; ``kind``
    is 1 for versions, dates and CVE ids and 0.7 for plain numbers (numbers are
    more often incidental); ``proximity = 1 − 0.5·min(1, d/WINDOW)`` with ``d``
    the larger claim distance. Two identical passages never disagree.

Measured on labelled pairs built from the Debian changelogs and the pydoc
topics in ``bench/data`` by ``bench/disagreement_eval.py``.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Annotated, NamedTuple

import msgspec

from sentient_core.analysis import MONTHS, QUESTION_WORDS, STOP_WORDS, stem
from sentient_core.metamemory.surprise import SurpriseBasis, SurpriseEvent, make_event

if TYPE_CHECKING:
    from sentient_core.relevance import TermStats

__all__ = [
    "FRAME_WORDS",
    "MARGIN",
    "MIN_COVERAGE",
    "SPAN",
    "WINDOW",
    "Disagreement",
    "detect_disagreement",
    "from_disagreement",
    "values_of",
]

WINDOW = 800
"""Characters from the focus within which a value can be a passage's claim (a long
changelog entry puts its version ~600 characters before the CVE it fixes)."""
SPAN = 150
"""Half-width of the span over which weak anchors must co-occur."""
MIN_COVERAGE = 0.6
"""Weighted share of a question's weak anchors a passage's focus must hold."""
MARGIN = 40
"""Slack, in characters, when comparing where two passages put a value."""
NUMBER_KIND = 0.7
"""Kind factor of plain numbers in the magnitude (versions, dates, CVE ids: 1)."""
CONTEXT = 8
"""Characters before a value that must match for an in-place substitution."""
SLACK = 8
"""How far (characters) the same place may move between the two passages."""
AFTER = 3
"""A value after the focus must be this many times closer than one before it to be the claim:
a value heads the block it belongs to (changelog entries, release notes, "Changed in version
X: ..."), except in close prose ("fixed in 2.6.1")."""

FRAME_WORDS: frozenset[str] = frozenset(
    stem(w)
    for w in """
    version versions release released date dates day year when fixed fix fixes package
    packages number many much count value uploaded upload changed change added new
    """.split()  # noqa: SIM905 - a word list reads better than quoted strings
)
"""Words that frame a factual question (what kind of value is asked) rather than say what
it is about; dropped from the weak anchors."""

_FRAMES: tuple[tuple[frozenset[str], frozenset[str]], ...] = (
    (frozenset({"version", "versions", "release", "released"}), frozenset({"version"})),
    (frozenset({"date", "dates", "day", "when", "year"}), frozenset({"date"})),
    (frozenset({"cve", "cves", "vulnerability"}), frozenset({"cve"})),
    (frozenset({"many", "number", "count", "much"}), frozenset({"number"})),
)
_DEFAULT_KINDS = frozenset({"version", "date", "cve", "number"})

_MONTHS = "|".join(sorted(m.title() for m in MONTHS if len(m) == 3))
_DAY_MONTH_YEAR = rf"\b\d{{1,2}} (?:{_MONTHS})[a-z]* \d{{4}}\b"
_VALUE = re.compile(
    rf"(?P<date>{_DAY_MONTH_YEAR}|\b\d{{4}}-\d{{2}}-\d{{2}}\b)"
    r"|(?P<time>\b\d{1,2}:\d{2}:\d{2}\b)"
    r"|(?P<cve>\bCVE-\d{4}-\d{4,7}\b)"
    r"|(?P<ref>#\d+\b)"
    r"|(?P<version>(?<![\w.+~:-])v?(?:\d+:)?\d+(?:[.+~-][0-9A-Za-z]+)*[.+~][0-9A-Za-z]+"
    r"(?:[.+~-][0-9A-Za-z]+)*)"
    r"|(?P<number>(?<![\w.+~:-])\d+(?![\w+~]|[.:-]\d))",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+")
_IDENT = re.compile(r"[\w.+~:-]+")
_BREAK = re.compile(r"\n[ \t]*\n")


class Value(NamedTuple):
    """A value token of a passage: its text, kind, shape and start offset."""

    text: str
    kind: str
    shape: str
    start: int


def _shape(kind: str, text: str) -> str:
    if kind in ("date", "time", "cve", "ref", "number"):
        return kind
    return re.sub(r"\d+", "9", re.sub(r"[A-Za-z]+", "a", text))


def values_of(text: str) -> list[Value]:
    """Every value token of ``text`` (versions, dates, times, CVE ids, numbers, ``#refs``)."""
    out = []
    for m in _VALUE.finditer(text):
        kind = m.lastgroup or "number"
        raw = m.group(0)
        value = raw.upper() if kind == "cve" else raw
        if kind == "version" and not any(c.isdigit() for c in raw.split(".", 1)[-1]):
            continue
        out.append(Value(value, kind, _shape(kind, raw), m.start()))
    return out


class Disagreement(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A conflict between memory's passage and the evidence.

    Attributes
    ----------
    magnitude : float
        Surprise ``s`` in [0, 1] (see the module docstring).
    explanation : str
        One sentence naming the anchor and both values.
    anchor : str
        The question term the values stand next to.
    expected, actual : str
        Memory's value and the evidence's value.
    kind : str
        Value class compared (``version``, ``date``, ``cve``, ``number``).
    strong : bool
        Whether the anchor was an identifier of the question.
    distance : int
        The larger of the two claims' distances from their focus, in characters.
    """

    magnitude: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
    explanation: str
    anchor: str
    expected: str
    actual: str
    kind: str
    strong: bool
    distance: int

    def basis(self) -> SurpriseBasis:
        """The :class:`~sentient_core.metamemory.surprise.SurpriseBasis` of this magnitude."""
        return SurpriseBasis(
            rule=f"disagreement.{self.kind}",
            inputs={
                "anchor": self.anchor,
                "expected": self.expected,
                "actual": self.actual,
                "strong_anchor": str(self.strong).lower(),
                "distance": str(self.distance),
            },
            detail=self.explanation,
        )


class _Question(NamedTuple):
    strong: tuple[str, ...]
    weak: dict[str, float]
    kinds: frozenset[str]
    removal: bool | None
    changed: tuple[str, ...]


class _Reading(NamedTuple):
    focus: tuple[int, ...]
    coverage: float
    anchor: str
    length: int
    values: tuple[Value, ...]
    breaks: tuple[int, ...]
    heading: bool


def _asked_kinds(question: str) -> frozenset[str]:
    """The value classes a question asks for, from the words right after its wh-word."""
    words = [w.lower() for w in _WORD.findall(question)]
    for i, word in enumerate(words):
        if word == "when":
            return frozenset({"date"})
        if word not in ("which", "what", "how"):
            continue
        for cue in words[i + 1 : i + 4]:
            for cues, wanted in _FRAMES:
                if cue in cues:
                    return wanted
        break
    return _DEFAULT_KINDS


_DATE = re.compile(_DAY_MONTH_YEAR, re.IGNORECASE)


def _identifiers(question: str) -> tuple[str, ...]:
    """Case-folded identifiers of the question: runs of word characters and ``.+~:-``
    with a digit or an underscore (``2.9.14+dfsg-1.3~deb12u5``, ``CVE-2024-1234``,
    ``__debug__``), at least three characters long; a date (``10 Feb 2025``) is
    one identifier, not a year (a year names hundreds of facts)."""
    out = [" ".join(m.group(0).split()).casefold() for m in _DATE.finditer(question)]
    rest = _DATE.sub(" ", question)
    for m in _IDENT.finditer(rest):
        ident = m.group(0).strip(".:-~+")
        if len(ident) >= 3 and any(c.isdigit() or c == "_" for c in ident):
            out.append(ident.casefold())
    return tuple(dict.fromkeys(out))


def _question(question: str, stats: TermStats | None) -> _Question:
    strong = _identifiers(question)
    weak: dict[str, float] = {}
    for word in _WORD.findall(_DATE.sub(" ", question).lower()):
        if word in STOP_WORDS or word in QUESTION_WORDS or any(c.isdigit() for c in word):
            continue
        term = stem(word)
        if term in FRAME_WORDS or len(term) < 2:
            continue
        weak[term] = 1.0 if stats is None else stats.idf(term)
    removal, after = _polarity(question)
    changed = tuple(i for i in _identifiers(after) if i in strong)
    return _Question(strong, weak, _asked_kinds(question), removal, changed)


_REMOVAL = frozenset(stem(w) for w in ("drop", "dropped", "remove", "removed", "delete", "deleted"))
_ADDITION = frozenset(stem(w) for w in ("add", "added", "introduce", "introduced"))


def _polarity(question: str) -> tuple[bool | None, str]:
    """True when the question asks what removed something, False what added it, else
    None; and the text after that verb (what was removed or added)."""
    for m in _WORD.finditer(question.lower()):
        term = stem(m.group(0))
        if term in _REMOVAL or term in _ADDITION:
            return term in _REMOVAL, question[m.end() :]
    return None, ""


_UPSTREAMED = re.compile(r"\b(?:applied|merged) upstream\b")


def _states_removal(text: str, at: int) -> bool:
    """Whether the line holding position ``at`` says something was removed."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    line = text[start : len(text) if end < 0 else end].lower()
    # A patch "applied upstream" or "merged upstream" is a patch dropped here.
    return _UPSTREAMED.search(line) is not None or any(
        stem(w) in _REMOVAL for w in _WORD.findall(line)
    )


def _strong_focus(text: str, q: _Question) -> tuple[tuple[int, ...], str] | None:
    folded = text.casefold()
    best: tuple[int, ...] = ()
    anchor = ""
    for ident in q.strong:
        # Whole identifiers only: 2:9.0.1378-2 is not inside 2:9.0.1378-2+deb12u2.
        pattern = rf"(?<![\w.+~:-]){re.escape(ident)}(?![\w+~]|[.:-]\w)"
        places = tuple(m.start() for m in re.finditer(pattern, folded))
        if not places:
            return None  # a passage about this fact names every identifier of the question
        if not best or (len(places), -len(ident)) < (len(best), -len(anchor)):
            best, anchor = places, ident
    return best, anchor


def _weak_focus(text: str, q: _Question) -> tuple[tuple[int, ...], float, str] | None:
    total = sum(q.weak.values())
    if total <= 0.0:
        return None
    hits = []
    for m in _WORD.finditer(text.lower()):
        term = stem(m.group(0))
        if term in q.weak:
            hits.append((m.start(), term))
    best = 0.0
    focus: list[int] = []
    for pos, _ in hits:
        near = {t for p, t in hits if abs(p - pos) <= SPAN}
        share = sum(q.weak[t] for t in near) / total
        if share > best + 1e-12:
            best, focus = share, [pos]
        elif abs(share - best) <= 1e-12:
            focus.append(pos)
    if best < MIN_COVERAGE:
        return None
    anchor = max(q.weak, key=lambda t: (q.weak[t], t))
    return tuple(focus), best, anchor


def _subject_coverage(text: str, q: _Question) -> float:
    """Weighted share of the question's weak terms found anywhere in ``text`` (1 without any)."""
    total = sum(q.weak.values())
    if total <= 0.0:
        return 1.0
    found = {stem(m.group(0)) for m in _WORD.finditer(text.lower())} & q.weak.keys()
    return sum(q.weak[t] for t in found) / total


def _read(text: str, q: _Question) -> _Reading | None:
    if q.strong:
        found = _strong_focus(text, q)
        if found is None:
            return None
        # A date says when, not what: two packages' entries share one. With
        # nothing but dates to anchor on, the other terms must say whose it is.
        if all(_DATE.fullmatch(a) for a in q.strong) and _subject_coverage(text, q) < MIN_COVERAGE:
            return None
        focus, anchor = found
        coverage = 1.0
    else:
        weak = _weak_focus(text, q)
        if weak is None:
            return None
        focus, coverage, anchor = weak
    if q.removal is not None:
        # "Which version dropped X?" is not answered by the entry that added X, nor
        # the reverse: a passage counts only where its line about X says what was asked.
        folded = text.casefold()
        for ident in q.changed:
            if not any(
                _states_removal(text, m.start()) == q.removal
                for m in re.finditer(re.escape(ident), folded)
            ):
                return None
        if not q.changed or anchor in q.changed:
            focus = tuple(f for f in focus if _states_removal(text, f) == q.removal)
            if not focus:
                return None
    own = set(q.strong)
    values = tuple(
        v
        for v in values_of(text)
        if v.kind in q.kinds
        and v.text.casefold() not in own
        # A token cut by the passage's edge (a chunk boundary) is not a value.
        and v.start > 0
        and v.start + len(v.text) < len(text)
    )
    breaks = tuple(m.start() for m in _BREAK.finditer(text))
    heading = all(_is_heading(text, f) for f in focus)
    return _Reading(focus, coverage, anchor, len(text), values, breaks, heading)


def _is_heading(text: str, at: int) -> bool:
    """Whether position ``at`` is on a one-line paragraph (a blank line or an edge on both sides)."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    end = len(text) if end < 0 else end
    prev_line = text[: max(0, start - 1)].rsplit("\n", 1)[-1] if start else ""
    next_line = text[end + 1 :].split("\n", 1)[0] if end < len(text) else ""
    return not prev_line.strip() and not next_line.strip()


def _reach(r: _Reading, o: int, at: int) -> float:
    """How far a value at ``at`` (offset ``o`` from a focus point) is from it, for claiming.

    A value before the focus counts its distance; one after it counts :data:`AFTER`
    times its distance, and not at all past a paragraph break (it heads the next block).
    """
    if o <= 0:
        return -o
    if any(at - o < brk < at for brk in r.breaks):
        return math.inf
    return AFTER * o


def _offset(r: _Reading, v: Value) -> int:
    """Signed offset of ``v`` from the focus point it is nearest to (by :func:`_reach`)."""
    return min((v.start - f for f in r.focus), key=lambda o: (_reach(r, o, v.start), o))


def _claim(r: _Reading, shape: str) -> tuple[Value, int] | None:
    """The value of ``shape`` nearest the focus by :func:`_reach`."""
    best = None
    for v in r.values:
        if v.shape != shape:
            continue
        o = _offset(r, v)
        reach = _reach(r, o, v.start)
        if reach <= WINDOW and (best is None or (reach, o) < best[2]):
            best = (v, o, (reach, o))
    return None if best is None else (best[0], best[1])


def _mentions(r: _Reading, text: str, limit: float, *, body: bool = True) -> bool:
    """Whether ``r`` has value ``text`` within ``limit`` (by :func:`_reach`) of its focus.

    With ``body``, when the focus is a heading (a one-line paragraph: a changelog
    entry's header) the blocks after it are its body, so a value anywhere within
    :data:`WINDOW` after it counts too.
    """
    for v in r.values:
        if v.text != text:
            continue
        o = _offset(r, v)
        if _reach(r, o, v.start) <= limit or (body and r.heading and 0 < o <= WINDOW):
            return True
    return False


def _covers(r: _Reading, offset: int) -> bool:
    return any(0 <= f + offset < r.length for f in r.focus)


def _refines(a: str, b: str) -> bool:
    """Whether one value extends the other at a separator (``7.88.1`` and ``7.88.1-10``)."""
    short, long = sorted((a.casefold(), b.casefold()), key=len)
    return long.startswith(short) and long[len(short) : len(short) + 1] in ".-+~:"


def _conflict(a: _Reading, b: _Reading, shape: str) -> tuple[Value, Value, int] | None:
    """The two claims of ``shape`` if they conflict (see the module docstring), and their distance."""
    ca, cb = _claim(a, shape), _claim(b, shape)
    if ca is None or cb is None:
        return None
    (va, oa), (vb, ob) = ca, cb
    if va.text == vb.text or _refines(va.text, vb.text):
        return None
    limit = max(_reach(a, oa, va.start), _reach(b, ob, vb.start)) + MARGIN
    if _mentions(b, va.text, limit) or _mentions(a, vb.text, limit):
        return None
    if not (_covers(b, oa) or _covers(a, ob)):
        return None
    return va, vb, max(abs(oa), abs(ob))


def _substitution(a: _Reading, b: _Reading, ta: str, tb: str) -> tuple[Value, Value, int] | None:
    """A value the evidence changed in place: same shape, same place, same text before it."""
    found = None
    for vb in b.values:
        ob = _offset(b, vb)
        if abs(ob) > WINDOW:
            continue
        before = tb[max(0, vb.start - CONTEXT) : vb.start]
        for va in a.values:
            if va.shape != vb.shape or va.text == vb.text:
                continue
            oa = _offset(a, va)
            if abs(oa - ob) > SLACK or ta[max(0, va.start - CONTEXT) : va.start] != before:
                continue
            if len(before) < CONTEXT or _mentions(a, vb.text, WINDOW, body=False):
                continue
            if _mentions(b, va.text, WINDOW, body=False):
                continue
            if found is None or abs(ob) < found[2]:
                found = (va, vb, abs(ob))
    return found


def detect_disagreement(
    question: str, predicted: str, evidence: str, stats: TermStats | None = None
) -> Disagreement | None:
    """Conflicting values next to the question's key terms, or None.

    Parameters
    ----------
    question : str
    predicted : str
        The passage memory answered with.
    evidence : str
        New grounded evidence.
    stats : TermStats, optional
        Document frequencies for idf weights of weak anchors.

    Returns
    -------
    Disagreement or None
        The strongest conflict (highest magnitude; ties: the first found in
        sorted order of value shapes), or None when the passages agree, say
        nothing comparable, or one of them is not about the question.
    """
    q = _question(question, stats)
    if not q.strong and not q.weak:
        return None
    a = _read(predicted, q)
    b = _read(evidence, q) if a is not None else None
    if a is None or b is None:
        return None
    shapes = {v.shape for v in a.values} & {v.shape for v in b.values}
    found = [_conflict(a, b, shape) for shape in sorted(shapes)]
    found.append(_substitution(a, b, predicted, evidence))
    best: Disagreement | None = None
    for hit in found:
        if hit is None:
            continue
        va, vb, distance = hit
        kind = va.kind
        s = (
            min(a.coverage, b.coverage)
            * (NUMBER_KIND if kind == "number" else 1.0)
            * (1.0 - 0.5 * min(1.0, distance / WINDOW))
        )
        one = Disagreement(
            magnitude=min(1.0, max(0.0, s)),
            explanation=(
                f"next to {a.anchor!r} memory says {va.text} and the evidence says {vb.text}"
                f" ({kind})"
            ),
            anchor=a.anchor,
            expected=va.text,
            actual=vb.text,
            kind=kind,
            strong=bool(q.strong),
            distance=distance,
        )
        if best is None or one.magnitude > best.magnitude:
            best = one
    return best


def from_disagreement(
    question: str,
    found: Disagreement,
    *,
    domain: str,
    source: str,
    time: float,
    action: str = "recall",
    session: str = "",
    source_memory: int = -1,
    correcting_memory: int = -1,
    correcting_source: str = "",
    cause: str = "disagreement",
) -> SurpriseEvent:
    """The surprise event of a detected :class:`~sentient_core.metamemory.disagreement.Disagreement`.

    ``expected``/``actual`` are the two conflicting values, the magnitude and
    its basis come from the detector. Use ``cause="ungrounded_contradicted"``
    when the wrong side was an ungrounded (LLM) answer.
    """
    return make_event(
        context=question,
        action=action,
        expected=found.expected,
        actual=found.actual,
        magnitude=found.magnitude,
        basis=found.basis(),
        domain=domain,
        source=source,
        cause=cause,
        time=time,
        session=session,
        source_memory=source_memory,
        correcting_memory=correcting_memory,
        correcting_source=correcting_source,
    )
