"""Precision and recall of the disagreement detector on labelled pairs built from real text.

Every pair is (question, memory's passage, evidence passage, label) made by
machine from the committed corpora in ``bench/data`` — the Debian changelogs
and the pydoc topics — and every label is checked by machine when the pair is
built (a ``BuildError`` otherwise):

Disagreements (label 1)
    ``fabricated``  memory's copy of the changelog chunk has the fixing
                    version (or the upload date) altered to a value the file
                    never contains; the evidence is the real chunk.
    ``neighbour``   memory's copy names the version of the adjacent entry
                    (the confusion a model makes); the evidence is the real chunk.
    ``prose``       memory holds a one-line answer naming a wrong version;
                    the evidence is the real chunk.
    ``pydoc``       a pydoc passage with its "Changed in version X.Y" altered
                    to X.(Y+1); the evidence is the real passage.

Agreements (label 0)
    ``prose-right`` a one-line answer naming the right version against the chunk.
    ``shifted``     the same facts in another chunk of the same file (a window
                    starting at the CVE line, or ending just after it).
    ``other-entry`` memory's chunk against the chunk of another question of
                    the same package (other CVE, other versions).
    ``pydoc-shifted``  the same pydoc note in a shifted window.
    ``pydoc-other``    another "Changed in version" note of the same topic.
    ``pydoc-copy``     the same note where another topic repeats it.

Run from a checkout::

    python bench/disagreement_eval.py [--json]

The test suite (tests/test_metamemory_disagreement.py) builds the same pairs and
checks the counts and the scores.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from sentient_core.errors import SentientError
from sentient_core.keyphrases import key_phrases
from sentient_core.metamemory.disagreement import detect_disagreement
from sentient_core.relevance import TermStats

DATA = Path(__file__).resolve().parent / "data"
CHUNK = 2000
STEP = 1800  # ingest's chunks: 2000 characters with 200 of overlap

_HEADER = re.compile(r"^(?P<src>[a-z0-9][a-z0-9.+-]+) \((?P<ver>[^)\s]+)\) [^;]+; urgency=", re.M)
_TRAILER = re.compile(r"^ -- .+?  \w{3}, (?P<date>\d{1,2} \w{3} \d{4}) \d\d:\d\d:\d\d", re.M)
_CVE_Q = re.compile(r"^Which version of the Debian (?P<pkg>\S+) package fixed (?P<cve>CVE-\S+)\?$")
_DATE_Q = re.compile(r"^On which date was version (?P<ver>\S+) of the Debian (?P<pkg>\S+) package")
_NOTE = re.compile(r"Changed in version (?P<ver>3\.\d+): (?P<text>(?:.+\n?)+?)(?:\n|$)")


class BuildError(SentientError):
    """A pair's label does not hold for the text it was built from."""


class Pair(NamedTuple):
    """One labelled pair."""

    set: str
    type: str
    question: str
    predicted: str
    evidence: str
    label: bool


def _chunk_with(text: str, *positions: int) -> str | None:
    """The first ingest chunk (2000/1800) that holds every position."""
    lo, hi = min(positions), max(positions)
    start = max(0, (hi - CHUNK + STEP) // STEP * STEP)
    while start <= lo:
        if hi < start + CHUNK:
            return text[start : start + CHUNK]
        start += STEP
    return None


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) < 1:
        raise BuildError(f"{old!r} not in the passage")
    return text.replace(old, new, 1)


def _bump(version: str, by: int) -> str:
    """The version with its last number raised by ``by``."""
    digits = list(re.finditer(r"\d+", version))
    last = digits[-1]
    return version[: last.start()] + str(int(last.group(0)) + by) + version[last.end() :]


def _entries(text: str) -> list[tuple[str, int, int]]:
    heads = list(_HEADER.finditer(text))
    return [
        (m.group("ver"), m.start(), heads[i + 1].start() if i + 1 < len(heads) else len(text))
        for i, m in enumerate(heads)
    ]


def _debian() -> Iterator[Pair]:
    qa = json.loads((DATA / "debian" / "qa.json").read_text(encoding="utf-8"))
    chunks_of: dict[str, list[str]] = defaultdict(list)
    cve_items = []
    for item in qa:
        text = (DATA / "debian" / "corpus" / item["source"]).read_text(encoding="utf-8")
        entries = _entries(text)
        m = _CVE_Q.match(item["q"])
        if m is not None:
            cve, pkg = m.group("cve"), m.group("pkg")
            ver = item["answers"][0].strip("()")
            k = next(i for i, (v, _, _) in enumerate(entries) if v == ver)
            _, a, b = entries[k]
            at = text.index(cve, a, b)
            chunk = _chunk_with(text, a, at)
            if chunk is None:
                continue
            cve_items.append((item, pkg, cve, ver, text, entries, k, at, chunk))
            chunks_of[item["source"]].append(chunk)
            continue
        m = _DATE_Q.match(item["q"])
        if m is None:
            raise BuildError(f"unknown question shape: {item['q']}")
        ver = m.group("ver")
        k = next(i for i, (v, _, _) in enumerate(entries) if v == ver)
        _, a, b = entries[k]
        date = item["answers"][0]
        at = text.index(date, a, b)
        chunk = _chunk_with(text, a, at)
        if chunk is None:
            continue
        day, rest = date.split(" ", 1)
        wrong = f"{(int(day) + 3 - 1) % 28 + 1:02d} {rest}"
        if wrong in text:
            wrong = f"{(int(day) + 5 - 1) % 28 + 1:02d} {rest}"
        if wrong in text:
            continue
        yield Pair(
            "debian", "fabricated", item["q"], _replace_once(chunk, date, wrong), chunk, True
        )
        shifted = text[max(0, a - 300) : max(0, a - 300) + CHUNK]  # from the entry before
        if date in shifted and ver in shifted and shifted != chunk:
            yield Pair("debian", "shifted", item["q"], chunk, shifted, False)

    for item, pkg, cve, ver, text, entries, k, at, chunk in cve_items:
        q = item["q"]
        wrong = next(w for w in (_bump(ver, n) for n in (7, 17, 37, 97)) if w not in text)
        yield Pair(
            "debian", "fabricated", q, _replace_once(chunk, f"({ver})", f"({wrong})"), chunk, True
        )
        if k + 1 < len(entries):
            neighbour = entries[k + 1][0]
            confused = _replace_once(chunk, f"({ver})", f"({neighbour})")
            yield Pair("debian", "neighbour", q, confused, chunk, True)
            prose = f"The Debian {pkg} package fixed {cve} in version {neighbour}."
            yield Pair("debian", "prose", q, prose, chunk, True)
        right = f"The Debian {pkg} package fixed {cve} in version {ver}."
        yield Pair("debian", "prose-right", q, right, chunk, False)
        line = text.rfind("\n", 0, at) + 1
        from_cve = text[line : line + CHUNK]
        upto_cve = text[max(0, at + 200 - CHUNK) : at + 200]
        for window in (from_cve, upto_cve):
            if cve not in window:
                raise BuildError(f"shifted window lost {cve}")
            if window != chunk:  # real text of the same file: the same facts
                yield Pair("debian", "shifted", q, chunk, window, False)
        others = [c for c in chunks_of[item["source"]] if cve not in c]
        if others:
            yield Pair("debian", "other-entry", q, chunk, others[len(q) % len(others)], False)


def _pydoc_notes() -> list[tuple[str, str, str, int]]:
    """(topic file, version, note text, offset) of every "Changed in version" note."""
    out = []
    for path in sorted((DATA / "pydoc" / "corpus").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        for m in _NOTE.finditer(text):
            note = " ".join(m.group("text").split())
            out.append((path.name, m.group("ver"), note, m.start()))
    return out


def _pydoc() -> Iterator[Pair]:
    corpus = DATA / "pydoc" / "corpus"
    texts = {p.name: p.read_text(encoding="utf-8") for p in sorted(corpus.glob("*.txt"))}
    stats = TermStats(texts.values())
    notes = _pydoc_notes()
    by_note: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for name, ver, note, at in notes:
        by_note[note].append((name, ver, at))
    for name, ver, note, at in notes:
        phrases = key_phrases(note, stats, k=2)
        if not phrases:
            continue
        q = f"In which Python version did {' and '.join(phrases)} change?"
        text = texts[name]
        passage = text[max(0, at - 600) : at + 600]
        marker = f"Changed in version {ver}:"
        major, minor = ver.split(".")
        wrong = f"{major}.{int(minor) + 1}"
        altered = _replace_once(passage, marker, f"Changed in version {wrong}:")
        yield Pair("pydoc", "pydoc", q, altered, passage, True)
        shifted = text[max(0, at - 250) : at + 900]
        if shifted != passage:
            yield Pair("pydoc", "pydoc-shifted", q, passage, shifted, False)
        others = [(v, o) for n, v, t, o in notes if n == name and t != note and abs(o - at) > 600]
        if others:
            v, o = others[len(q) % len(others)]
            yield Pair("pydoc", "pydoc-other", q, passage, text[max(0, o - 600) : o + 600], False)
        for other, v, o in by_note[note]:
            if other != name and v == ver:
                copy = texts[other][max(0, o - 600) : o + 600]
                yield Pair("pydoc", "pydoc-copy", q, passage, copy, False)
                break


def _held_out() -> Iterator[Pair]:
    """Pair families written after the detector was frozen (never used to tune it)."""
    qa = json.loads((DATA / "debian" / "qa.json").read_text(encoding="utf-8"))
    for item in qa:
        text = (DATA / "debian" / "corpus" / item["source"]).read_text(encoding="utf-8")
        entries = _entries(text)
        q = item["q"]
        m = _DATE_Q.match(q)
        if m is not None:
            ver, pkg, date = m.group("ver"), m.group("pkg"), item["answers"][0]
            k = next(i for i, (v, _, _) in enumerate(entries) if v == ver)
            _, a, b = entries[k]
            chunk = _chunk_with(text, a, text.index(date, a, b))
            if chunk is None or k + 1 >= len(entries):
                continue
            other = _TRAILER.search(text, entries[k + 1][1], entries[k + 1][2])
            if other is None or other.group("date") == date:
                continue
            wrong = other.group("date")
            said = "Version {} of the Debian {} package was uploaded on {}."
            yield Pair(
                "heldout", "date-neighbour", q, _replace_once(chunk, date, wrong), chunk, True
            )
            yield Pair("heldout", "date-prose", q, said.format(ver, pkg, wrong), chunk, True)
            yield Pair("heldout", "date-prose-right", q, said.format(ver, pkg, date), chunk, False)
            continue
        m = _CVE_Q.match(q)
        if m is None:
            continue
        cve, ver = m.group("cve"), item["answers"][0].strip("()")
        k = next(i for i, (v, _, _) in enumerate(entries) if v == ver)
        if k + 1 >= len(entries):
            continue
        _, a, b = entries[k]
        at = text.index(cve, a, b)
        chunk = _chunk_with(text, a, at)
        if chunk is None:
            continue
        # Memory right (a window starting 200 characters earlier), the evidence wrong.
        window = text[max(0, a - 200) : max(0, a - 200) + CHUNK]
        if cve not in window or f"({ver})" not in window:
            continue
        wrong = _replace_once(chunk, f"({ver})", f"({entries[k + 1][0]})")
        yield Pair("heldout", "evidence-wrong", q, window, wrong, True)
    stats = TermStats(
        p.read_text(encoding="utf-8") for p in (DATA / "pydoc" / "corpus").glob("*.txt")
    )
    for _, ver, note, _ in _pydoc_notes():
        phrases = key_phrases(note, stats, k=2)
        if not phrases:
            continue
        q = f"In which Python version did {' and '.join(phrases)} change?"
        major, minor = ver.split(".")
        first = note.split(". ")[0].rstrip(".")
        right = f"Since Python {ver}: {first}."
        wrong = f"Since Python {major}.{int(minor) + 1}: {first}."
        passage = f"Changed in version {ver}: {note}"
        yield Pair("heldout", "pydoc-prose", q, wrong, passage, True)
        yield Pair("heldout", "pydoc-prose-right", q, right, passage, False)


_NEW_IN = re.compile(r"New in version (?P<ver>3\.\d+)")


def _held_out_2() -> Iterator[Pair]:
    """Pair families written after the second (final) freeze; never used to tune anything."""
    corpus = DATA / "pydoc" / "corpus"
    texts = {p.name: p.read_text(encoding="utf-8") for p in sorted(corpus.glob("*.txt"))}
    stats = TermStats(texts.values())
    for text in texts.values():
        for m in _NEW_IN.finditer(text):
            at, ver = m.start(), m.group("ver")
            lead = text[max(0, at - 400) : at]
            phrases = key_phrases(lead, stats, k=2)
            if not phrases:
                continue
            q = f"In which Python version was {' and '.join(phrases)} added?"
            passage = text[max(0, at - 600) : at + 600]
            major, minor = ver.split(".")
            altered = _replace_once(passage, m.group(0), f"New in version {major}.{int(minor) + 2}")
            yield Pair("heldout2", "new-in", q, altered, passage, True)
            shifted = text[max(0, at - 300) : at + 900]
            if shifted != passage:
                yield Pair("heldout2", "new-in-shifted", q, passage, shifted, False)
    qa = json.loads((DATA / "debian" / "qa.json").read_text(encoding="utf-8"))
    for item in qa:
        m = _CVE_Q.match(item["q"])
        if m is None:
            continue
        text = (DATA / "debian" / "corpus" / item["source"]).read_text(encoding="utf-8")
        entries = _entries(text)
        cve, pkg, ver = m.group("cve"), m.group("pkg"), item["answers"][0].strip("()")
        k = next(i for i, (v, _, _) in enumerate(entries) if v == ver)
        if k + 1 >= len(entries):
            continue
        _, a, b = entries[k]
        chunk = _chunk_with(text, a, text.index(cve, a, b))
        if chunk is None:
            continue
        neighbour = entries[k + 1][0]
        said = "{} in the Debian {} package: fixed by version {}."
        yield Pair(
            "heldout2", "cve-first-right", item["q"], said.format(cve, pkg, ver), chunk, False
        )
        yield Pair(
            "heldout2", "cve-first", item["q"], said.format(cve, pkg, neighbour), chunk, True
        )
        window = text[max(0, a - 200) : max(0, a - 200) + CHUNK]
        if cve in window and f"({ver})" in window:
            confused = _replace_once(window, f"({ver})", f"({neighbour})")
            yield Pair("heldout2", "shifted-neighbour", item["q"], confused, chunk, True)


_HARD_DATE_Q = re.compile(
    r"^Which version of the Debian (?P<pkg>\S+) package was uploaded on (?P<date>.+)\?$"
)
_HARD_CHANGE_Q = re.compile(
    r"^Which version of the Debian (?P<pkg>\S+) package (?P<verb>added|removed|dropped) (?P<what>.+)\?$"
)


def _hard() -> Iterator[Pair]:
    """Pairs from the harder Q/A set (``debian/hard.json``), written after a learn run on it
    opened 18 debts, none of them a real contradiction: another package's entry of the
    same month (a year was the only anchor), and the entry that added a patch read as
    contradicting the one that dropped it."""
    corpus = DATA / "debian" / "corpus"
    texts = {p.name: p.read_text(encoding="utf-8") for p in sorted(corpus.glob("*.changelog.txt"))}
    entries_of = {name: _entries(text) for name, text in texts.items()}
    qa = json.loads((DATA / "debian" / "hard.json").read_text(encoding="utf-8"))
    changes: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for item in qa:
        text, entries = texts[item["source"]], entries_of[item["source"]]
        ver = item["answers"][0].strip("()")
        own = next(((a, b) for v, a, b in entries if v == ver), None)
        if own is None or len(own) < 2:
            continue
        a, b = own
        chunk = text[a : min(b, a + CHUNK)]
        m = _HARD_DATE_Q.match(item["q"])
        if m is not None:
            date = m.group("date")
            if date not in chunk:
                continue
            k = next(i for i, (v, _, _) in enumerate(entries) if v == ver)
            if k + 1 < len(entries):
                wrong = _replace_once(chunk, f"({ver})", f"({entries[k + 1][0]})")
                yield Pair("hard", "date-version", item["q"], wrong, chunk, True)
            month = date.split(" ", 1)[1]
            for name, other in texts.items():
                if name == item["source"]:
                    continue
                hit = next(
                    (
                        (x, y)
                        for _, x, y in entries_of[name]
                        if (t := _TRAILER.search(other, x, y)) is not None
                        and t.group("date").endswith(month)
                        and t.end() - x <= CHUNK
                    ),
                    None,
                )
                if hit is not None:
                    passage = other[hit[0] : min(hit[1], hit[0] + CHUNK)]
                    yield Pair("hard", "date-other-package", item["q"], passage, chunk, False)
                    break
            continue
        m = _HARD_CHANGE_Q.match(item["q"])
        if m is not None:
            changes[(item["source"], m.group("what"))][m.group("verb")] = item["q"]
            changes[(item["source"], m.group("what"))]["chunk:" + m.group("verb")] = chunk
            changes[(item["source"], m.group("what"))]["ver:" + m.group("verb")] = ver
    for got in changes.values():
        removed = "removed" if "removed" in got else "dropped"
        if "added" not in got or removed not in got:
            continue
        add, drop = got["chunk:added"], got[f"chunk:{removed}"]
        yield Pair("hard", "negation-added", got["added"], drop, add, False)
        yield Pair("hard", "negation-removed", got[removed], add, drop, False)
        ver = got[f"ver:{removed}"]
        if f"({ver})" in drop:
            wrong = _replace_once(drop, f"({ver})", f"({_bump(ver, 1)})")
            yield Pair("hard", "negation-fabricated", got[removed], wrong, drop, True)


def build_pairs(*, held_out: bool = True) -> list[Pair]:
    """Every labelled pair, in a fixed order (with the held-out families unless told)."""
    held = [*_held_out(), *_held_out_2(), *_hard()] if held_out else []
    return [*_debian(), *_pydoc(), *held]


def _scores(rows: Sequence[tuple[bool, bool]]) -> dict[str, float]:
    tp = sum(1 for label, hit in rows if label and hit)
    fp = sum(1 for label, hit in rows if not label and hit)
    fn = sum(1 for label, hit in rows if label and not hit)
    tn = sum(1 for label, hit in rows if not label and not hit)
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    return {
        "pairs": len(rows),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": precision,
        "recall": recall,
    }


def evaluate(pairs: Sequence[Pair]) -> dict[str, dict[str, float]]:
    """Scores overall, per set and per pair type (keys ``all``, ``set:NAME``, ``type:NAME``)."""
    groups: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for p in pairs:
        hit = detect_disagreement(p.question, p.predicted, p.evidence) is not None
        for key in ("all", f"set:{p.set}", f"type:{p.type}"):
            groups[key].append((p.label, hit))
    return {key: _scores(rows) for key, rows in sorted(groups.items())}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    args = parser.parse_args(argv)
    table = evaluate(build_pairs())
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(
        f"{'group':<22} {'pairs':>5} {'tp':>4} {'fp':>4} {'fn':>4} {'tn':>4} {'prec':>6} {'recall':>6}"
    )
    for key, s in table.items():
        print(
            f"{key:<22} {s['pairs']:>5} {s['tp']:>4} {s['fp']:>4} {s['fn']:>4} {s['tn']:>4}"
            f" {s['precision']:>6.3f} {s['recall']:>6.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
