"""Verify-then-condense: episodic traces that agree become a semantic note (SPEC §6).

One pass of :class:`Condenser` (:meth:`Condenser.run`) does, in one write
transaction:

1. **Candidates.** The salient key phrases of every live trace it reads
   (:func:`~sentient_core.keyphrases.key_phrases` with idf from those traces); a
   phrase is a candidate subject when traces from at least ``min_sources``
   different sources name it.
2. **The gate.** No two of those traces from different sources may disagree about
   the subject (:func:`~sentient_core.metamemory.disagreement.detect_disagreement`
   on "What is known about <subject>?"), and at least two sources must give a
   sentence that names it. A candidate that fails is *vetoed*, with the reason
   counted; an existing note on a subject whose traces now disagree is retired and a
   debt opens.
3. **The note.** Up to ``sentences_per_trace`` sentences naming the subject from
   each supporting trace, lifted verbatim with their offsets
   (:class:`~sentient_core.layers.notes.NoteSentence`). A subject's live note that
   gains supporting traces is revised in place (same id); one whose traces are all
   still the same is left alone.
4. **Retirement.** A live note citing a trace that is retired (superseded by a
   changed file, or retired by credit after contradictions) or gone is retired, and
   a debt opens naming the trace: nothing is deleted.

With a ``summarize`` callable (a model: the learner passes one when a chat model
is configured), a subject that passes the gate and has no live note yet is
first summarised *outside* the write transaction from its lifted sentences; the
summary becomes an abstractive note only if :func:`supported` finds every one
of its sentences carried by a cited trace. Otherwise the note is *rejected*: none
is written and the episodes stay as they are (a ``rejected`` layer event says
which sentence no source carries). A summarizer that returns None (the budget
refused the call, the model failed) leaves the note extractive.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Annotated

import msgspec

from sentient_core.analysis import (
    content_terms,
    sentence_spans,
    shared_shingles,
    shingles,
    split_sentences,
    stem,
)
from sentient_core.keyphrases import key_phrases, question_about
from sentient_core.layers.notes import (
    MAX_CITES,
    MAX_SENTENCES,
    NOTES,
    NoteRecord,
    NoteSentence,
    find,
    put,
)
from sentient_core.metamemory.debts import DebtBook
from sentient_core.metamemory.disagreement import detect_disagreement
from sentient_core.metamemory.domain import domain_of
from sentient_core.relevance import TermStats, relevance
from sentient_core.store import traces as stored

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.memory import HolographicMemory
    from sentient_core.store.records import TraceRecord
    from sentient_core.store.txn import Txn

__all__ = [
    "COPY_SHARE",
    "CondenseReport",
    "CondenseSettings",
    "Condenser",
    "note_sentences",
    "supported",
]


COPY_SHARE = 0.5
"""Share of shared 5-word runs above which two sentences are one text copied."""


class CondenseSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How a condensation pass reads and writes (config ``[layers]``)."""

    min_sources: Annotated[int, msgspec.Meta(ge=2, le=16)] = 2
    """Distinct sources that must agree before a note is written."""
    min_words: Annotated[int, msgspec.Meta(ge=1, le=3)] = 2
    """Words a subject needs: one word ("table", "manager") names no one subject."""
    sentences_per_trace: Annotated[int, msgspec.Meta(ge=1, le=8)] = 2
    """Sentences lifted from each supporting trace."""
    phrases_per_trace: Annotated[int, msgspec.Meta(ge=1, le=32)] = 8
    """Key phrases of a trace that may become subjects."""
    min_shared: Annotated[int, msgspec.Meta(ge=1, le=32)] = 4
    """Content terms besides the subject's that a sentence must share with a sentence of
    another source to be kept (what the sources agree on)."""
    max_sentence_chars: Annotated[int, msgspec.Meta(ge=40, le=4000)] = 400
    """Longer "sentences" (a list of names, a table run together) are not lifted."""
    max_traces: Annotated[int, msgspec.Meta(ge=2)] = 5000
    """The newest live traces one pass reads (the rest wait for a later pass)."""


class CondenseReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What one pass did: the condensation gate's passes and vetoes.

    Attributes
    ----------
    traces : int
        Live traces read.
    candidates : int
        Subjects named by traces from at least ``min_sources`` sources.
    promoted, revised, unchanged : int
        New notes; live notes that gained supporting traces; live notes left as they were.
    vetoed : dict of str to int
        Candidates refused, by reason: ``disagreement`` (two sources conflict),
        ``few_sentences`` (fewer than ``min_sources`` sources give a sentence naming it),
        ``duplicate`` (its note would lift exactly the sentences a live note on another
        subject holds: the same knowledge under another phrase).
        ``unsupported`` (a model's note with a sentence no cited trace carries: rejected).
    retired : int
        Notes retired (a supporting trace retired or gone, or its traces now disagree).
    debts : tuple of int
        Debts the retirements opened.
    seconds : float
    """

    traces: int
    candidates: int
    promoted: int
    revised: int
    unchanged: int
    vetoed: dict[str, int]
    retired: int
    debts: tuple[int, ...]
    seconds: float


class _Change(msgspec.Struct, frozen=True):
    action: str  # promoted | revised | retired
    note: NoteRecord
    reason: str


def note_sentences(
    trace: TraceRecord, key: tuple[str, ...], limit: int, max_chars: int = 400
) -> list[NoteSentence]:
    """The first ``limit`` sentences of ``trace`` (of at most ``max_chars``) whose content
    terms hold every stem of ``key``, with their offsets in ``trace.text``."""
    out: list[NoteSentence] = []
    want = set(key)
    text = trace.text
    for a, b in sentence_spans(text):
        if b - a > max_chars or _fragment(text[a:b]):
            continue  # too long to be one claim, or not a whole sentence
        if want <= set(content_terms(text[a:b])):
            out.append(
                NoteSentence(
                    trace=trace.id, source=trace.source[:1000], start=a, end=b, text=text[a:b]
                )
            )
            if len(out) >= limit:
                break
    return out


def _fragment(sentence: str) -> bool:
    """Whether ``sentence`` starts in lower case after any quotes, bullets and spaces: cut
    at a chunk's edge (``"nteroperate on …"``) or a list item (``* a builtin class …``)."""
    first = next((c for c in sentence if c.isalpha()), "")
    return first.islower()


def supported(note: str, passages: Sequence[str], *, min_relevance: float = 0.8) -> list[str]:
    """The sentences of an abstractive ``note`` that no passage carries (empty: every one
    is supported). A sentence is carried when :func:`~sentient_core.relevance.relevance`
    of it, read as a question, against some passage is at least ``min_relevance``."""
    unsupported = []
    for sentence in split_sentences(note):
        if not content_terms(sentence):
            continue
        if not any(relevance(sentence, p) >= min_relevance for p in passages):
            unsupported.append(sentence)
    return unsupported


class Condenser:
    """Writes, revises and retires semantic notes over one memory (see the module docstring).

    Parameters
    ----------
    memory : HolographicMemory
        On a writable store.
    settings : CondenseSettings
    emit : Emitter, optional
        Each promotion, revision and retirement is a :class:`~sentient_core.events.LayerEvent`.
    clock : callable
    summarize : callable, optional
        ``summarize(subject, sentences)`` → a model's note, or None (see the module
        docstring); None: every note is extractive.
    """

    def __init__(
        self,
        memory: HolographicMemory,
        settings: CondenseSettings | None = None,
        *,
        emit: Emitter | None = None,
        clock: Callable[[], float] = time.time,
        summarize: Callable[[str, Sequence[str]], str | None] | None = None,
    ) -> None:
        self.summarize = summarize
        self._read: dict[tuple[str, ...], tuple[str, list[NoteSentence]]] = {}
        self.memory = memory
        self.settings = settings or CondenseSettings()
        self._emit = emit
        self._clock = clock
        self._debts = DebtBook(memory.datastore, emit=emit, clock=clock)

    def run(self) -> CondenseReport:
        """One condensation pass (see the module docstring)."""
        t0 = time.perf_counter()
        self._read = {}
        s = self.settings
        traces = [r for r in self.memory.recent(s.max_traces) if not r.retired and r.text]
        stats = TermStats(r.text for r in traces)
        groups: dict[tuple[str, ...], list[tuple[TraceRecord, str]]] = defaultdict(list)
        for r in traces:
            for phrase in key_phrases(r.text, stats, k=s.phrases_per_trace):
                groups[tuple(stem(w) for w in phrase.split())].append((r, phrase))
        candidates = {
            key: members
            for key, members in groups.items()
            if len(key) >= s.min_words and len({r.source for r, _ in members}) >= s.min_sources
        }
        tally: dict[str, int] = {}
        drafts, rejected = self._abstracts(candidates, stats)

        def write(txn: Txn) -> list[_Change]:
            # The store re-runs this after growing its map: count from zero each run.
            tally.clear()
            tally.update(unchanged=0, disagreement=0, few_sentences=0, duplicate=0, unsupported=0)
            now = float(self._clock())
            # What each live note says, sentence spans and all: a subject whose note would
            # say exactly that again is the same knowledge under another phrase.
            said = {_spans(n): n.key for n in NOTES.iter(txn) if n.state == "semantic"}
            changes = [
                c
                for key in sorted(candidates)
                if (
                    c := self._condense(
                        txn, key, candidates[key], stats, now, tally, said, drafts, rejected
                    )
                )
                is not None
            ]
            return changes + self._retire_stale(txn, now)

        changes = self.memory.datastore.write(write)
        for c in changes:
            if c.action == "retired" and c.note.debt >= 0:
                self._debts.noted("opened", self._debts.get(c.note.debt))
            self._publish(c)
        retired = [c.note for c in changes if c.action == "retired"]
        return CondenseReport(
            traces=len(traces),
            candidates=len(candidates),
            promoted=sum(c.action == "promoted" for c in changes),
            revised=sum(c.action == "revised" for c in changes),
            unchanged=tally["unchanged"],
            vetoed={
                k: tally[k] for k in ("disagreement", "few_sentences", "duplicate", "unsupported")
            },
            retired=len(retired),
            debts=tuple(n.debt for n in retired if n.debt >= 0),
            seconds=time.perf_counter() - t0,
        )

    # -- one subject -------------------------------------------------------------------------

    def _condense(
        self,
        txn: Txn,
        key: tuple[str, ...],
        members: list[tuple[TraceRecord, str]],
        stats: TermStats,
        now: float,
        tally: dict[str, int],
        said: dict[frozenset[tuple[int, int, int]], tuple[str, ...]],
        drafts: dict[tuple[str, ...], str],
        rejected: dict[tuple[str, ...], str],
    ) -> _Change | None:
        """The change on subject ``key``, or None (vetoed or unchanged: ``tally`` says which)."""
        phrase = _surface(members)
        existing = find(txn, key)
        live = existing if existing is not None and existing.state == "semantic" else None
        conflict, sentences = self._reading(key, phrase, members, stats)
        if conflict:
            tally["disagreement"] += 1
            if live is not None:
                return self._retire(txn, live, f"its sources now disagree: {conflict}", now)
            return None
        cites = tuple(dict.fromkeys(x.trace for x in sentences))[:MAX_CITES]
        sources = tuple(dict.fromkeys(x.source for x in sentences))[:MAX_CITES]
        if len(sources) < self.settings.min_sources:
            tally["few_sentences"] += 1
            return None
        if live is not None and set(cites) <= set(live.cites):
            tally["unchanged"] += 1
            return None
        spans = frozenset((x.trace, x.start, x.end) for x in sentences)
        if said.get(spans, key) != key:
            tally["duplicate"] += 1
            return None
        said[spans] = key
        reason = (
            f"{len(sources)} independent sources name {phrase!r} and no two of them"
            f" disagree about it ({len(cites)} traces)"
        )
        if live is not None:
            note = msgspec.structs.replace(
                live,
                sentences=tuple(sentences),
                cites=cites,
                sources=sources,
                reason=reason,
                updated=now,
            )
            put(txn, note)
            return _Change("revised", note, reason)
        note = NoteRecord(
            id=NOTES.next_id(txn),
            subject=phrase[:200],
            key=key,
            sentences=tuple(sentences),
            cites=cites,
            sources=sources,
            reason=reason,
            mode="abstractive" if key in drafts else "extractive",
            summary=drafts.get(key, "")[:4000],
            replaces=existing.id if existing is not None else -1,
            created=now,
            updated=now,
        )
        if key in rejected:  # a model's note no source carries: none is written
            tally["unsupported"] += 1
            return _Change("rejected", note, rejected[key])
        put(txn, note)
        return _Change("promoted", note, reason)

    def _reading(
        self,
        key: tuple[str, ...],
        phrase: str,
        members: list[tuple[TraceRecord, str]],
        stats: TermStats,
    ) -> tuple[str, list[NoteSentence]]:
        """The gate's reading of subject ``key``: the first disagreement among ``members``
        ("" if none) and the sentences a note would lift (module docstring, 2–3). Read once
        a pass: the model step and the write both use it."""
        if key in self._read:
            return self._read[key]
        s = self.settings
        out: list[NoteSentence] = []
        seen: set[int] = set()
        for r, _ in sorted(members, key=lambda m: m[0].id):
            if r.id not in seen:
                seen.add(r.id)
                out.extend(note_sentences(r, key, s.sentences_per_trace, s.max_sentence_chars))
        reading = (
            _conflict(phrase, [r for r, _ in members], stats),
            _agreeing(_distinct(out), key, s.min_shared)[:MAX_SENTENCES],
        )
        self._read[key] = reading
        return reading

    def _abstracts(
        self, candidates: dict[tuple[str, ...], list[tuple[TraceRecord, str]]], stats: TermStats
    ) -> tuple[dict[tuple[str, ...], str], dict[tuple[str, ...], str]]:
        """Model summaries of the subjects that would get a new note, asked before the write
        transaction: (supported summaries, why others were rejected) by subject."""
        drafts: dict[tuple[str, ...], str] = {}
        rejected: dict[tuple[str, ...], str] = {}
        if self.summarize is None:
            return drafts, rejected
        with self.memory.datastore.read() as txn:
            fresh = [
                k
                for k in sorted(candidates)
                if (n := find(txn, k)) is None or n.state != "semantic"
            ]
        for key in fresh:
            members = candidates[key]
            phrase = _surface(members)
            conflict, sentences = self._reading(key, phrase, members, stats)
            if conflict or len({x.source for x in sentences}) < self.settings.min_sources:
                continue
            summary = self.summarize(phrase, [x.text for x in sentences])
            if summary is None or not summary.strip():
                continue  # no model answer: the note stays extractive
            cited = {x.trace for x in sentences}
            passages = [r.text for r, _ in members if r.id in cited]
            missing = supported(summary, passages)
            if missing:
                rejected[key] = f"the model's note says what no source carries: {missing[0]!r}"
            else:
                drafts[key] = summary.strip()
        return drafts, rejected

    # -- retirement --------------------------------------------------------------------------

    def _retire_stale(self, txn: Txn, now: float) -> list[_Change]:
        out = []
        for note in list(NOTES.iter(txn)):
            if note.state != "semantic":
                continue
            for t in note.cites:
                rec = stored.get(txn, t)
                if rec is None or rec.retired:
                    why = "is gone" if rec is None else "was retired (superseded or contradicted)"
                    out.append(self._retire(txn, note, f"supporting trace {t} {why}", now, t))
                    break
        return out

    def _retire(self, txn: Txn, note: NoteRecord, why: str, now: float, trace: int = -1) -> _Change:
        debt = self._debts.open_in(
            txn,
            pattern=f"note {note.id} on {note.subject!r} retired: {why}"[:2000],
            hypotheses=(
                f"what the sources said about {note.subject} still holds",
                f"what the sources said about {note.subject} changed",
            ),
            domain=domain_of(question_about(note.subject)),
            fragility=0.5,
            source_memory=trace if trace >= 0 else note.cites[0],
        )
        retired = msgspec.structs.replace(
            note, state="retired", retired_reason=why[:4000], debt=debt.id, updated=now
        )
        put(txn, retired)
        return _Change("retired", retired, why)

    def _publish(self, c: _Change) -> None:
        if self._emit is None:
            return
        from sentient_core.events import LayerEvent

        self._emit.emit(
            LayerEvent,
            layer="semantic",
            record="note:-" if c.action == "rejected" else f"note:{c.note.id}",
            action=c.action,
            subject=c.note.subject,
            reason=c.reason[:2000],
            evidence=c.note.cites,
        )


def _surface(members: Iterable[tuple[TraceRecord, str]]) -> str:
    """The phrase as most traces write it (ties: alphabetical)."""
    counts: dict[str, int] = defaultdict(int)
    for _, p in members:
        counts[p] += 1
    return min(counts, key=lambda p: (-counts[p], p))


def _conflict(phrase: str, traces: list[TraceRecord], stats: TermStats) -> str:
    """The first disagreement between two traces from different sources, in words ("": none)."""
    question = question_about(phrase)
    unique = list({r.id: r for r in traces}.values())
    for a, b in itertools.combinations(unique, 2):
        if a.source == b.source:
            continue
        found = detect_disagreement(question, a.text, b.text, stats)
        if found is not None:
            return f"traces {a.id} and {b.id}: {found.explanation}"
    return ""


def _spans(note: NoteRecord) -> frozenset[tuple[int, int, int]]:
    return frozenset((x.trace, x.start, x.end) for x in note.sentences)


def _agreeing(
    sentences: list[NoteSentence], key: tuple[str, ...], min_shared: int
) -> list[NoteSentence]:
    """The sentences that say something a sentence from another source also says: they
    share at least ``min_shared`` content terms besides the subject's own. Sharing only
    the subject's name is not agreement (a list of names and a changelog line both name
    a person)."""
    subject = set(key)
    terms = [set(content_terms(x.text)) - subject for x in sentences]
    keep = []
    for i, x in enumerate(sentences):
        if any(
            y.source != x.source and len(terms[i] & terms[j]) >= min_shared
            for j, y in enumerate(sentences)
        ):
            keep.append(x)
    return keep


def _distinct(sentences: list[NoteSentence]) -> list[NoteSentence]:
    """``sentences`` without copies: a sentence sharing at least :data:`COPY_SHARE` of its
    word runs with an earlier one (the same text copied into two files, or cut at a
    chunk's edge) is the same evidence, not a second source; the first is kept."""
    kept: list[tuple[NoteSentence, frozenset[int]]] = []
    for x in sentences:
        sh = shingles(x.text)
        if all(shared_shingles(sh, other) < COPY_SHARE for _, other in kept):
            kept.append((x, sh))
    return [x for x, _ in kept]
