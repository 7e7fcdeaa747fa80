"""Storing a chaperone's answer: each relevant passage under its own source, audited.

The learner hands every response here. :meth:`AnswerIntegration.integrate` keeps
the passages that answer the request's question (the judge's relevance gate,
:func:`sentient_core.learning.passages.select`), stores each one — under its
section heading, with its own source — and reports what was new and what memory
already held. Each passage's ``integrate`` audit event is written in the traces'
own transaction, so a crash can never leave a learned trace without the event
that explains it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from sentient_core.events import Emitter, EventBus, IntegrateEvent
from sentient_core.integrate.summary import IngestSummary
from sentient_core.learning.passages import (
    SEARCH_ROUTE,
    asked,
    found_passages,
    passages_of,
    select,
)
from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, Passage

if TYPE_CHECKING:
    from sentient_core.autonomy.judge import Judge
    from sentient_core.integrate import Integrator
    from sentient_core.learning.chaperone import Chaperone
    from sentient_core.memory import MemoryTxn
    from sentient_core.metamemory.loop import PassageStore
    from sentient_core.observer import Observer

__all__ = ["AnswerIntegration", "Integrated", "PassageIntegrated"]


class Integrated(msgspec.Struct):
    """What integrating one response stored (new chunks) and found already known.

    Attributes
    ----------
    new, known : int
        Chunks stored, and chunks memory already held.
    known_trace : int
        The first holder of known content (-1: none).
    relevance : float or None
        The best passage's relevance to the question (None: no question).
    text : str
        The first new passage as stored.
    stored : list
        ``(passage, trace ids)`` per kept passage (new ids, else the holders').
    new_ids : list of int
        Every new trace, in order.
    best_known : bool
        The best kept passage (the most relevant) was already in memory: whatever
        new passages ranked below it add, memory already held the answer.
    """

    new: int = 0
    known: int = 0
    known_trace: int = -1
    relevance: float | None = None
    text: str = ""
    stored: list = msgspec.field(default_factory=list)
    new_ids: list[int] = msgspec.field(default_factory=list)
    best_known: bool = False

    @property
    def first_new(self) -> int:
        """The first new trace (-1: none)."""
        return self.new_ids[0] if self.new_ids else -1


class PassageIntegrated(msgspec.Struct, frozen=True, kw_only=True):
    """What integrating one passage did (:meth:`AnswerIntegration.integrate_one`).

    Attributes
    ----------
    summary : IngestSummary
        The commit's summary: new trace ids (``ids``), holders (``known``), counts.
    event : IntegrateEvent or None
        The passage's integrate event, written with its traces (None: the
        passage had no text to store, and nothing was written).
    written : int
        Pending bus events the same transaction wrote (for :meth:`EventBus.confirm`).
    """

    summary: IngestSummary
    event: IntegrateEvent | None = None
    written: int = 0


class AnswerIntegration:
    """Stores the relevant passages of responses (see the module docstring)."""

    def __init__(
        self,
        integrator: Integrator,
        observer: Observer,
        events: EventBus,
        chaperone: Chaperone,
        judge: Judge,
    ) -> None:
        self.integrator = integrator
        self.observer = observer
        self.events = events
        self.chaperone = chaperone
        self.judge = judge

    def integrate(
        self, req: ChaperoneRequest, response: ChaperoneResponse, emit: Emitter
    ) -> Integrated:
        """Store each relevant passage under its own source; memory's copies are not stored."""
        question = asked(req)  # a found source is read for its question (searching)
        found = req.route == SEARCH_ROUTE
        stats = self.chaperone.term_stats() if question else None
        if found and stats is not None and not stats.documents:
            stats = None  # an empty corpus gives every term idf 0: a found file's weigh 1
        selection = select(
            question,
            found_passages(response) if found else passages_of(req, response),
            stats=stats,
            threshold=self.judge.relevant,
        )
        done = Integrated(relevance=selection.relevance)
        for passage in selection.keep:
            one = self.integrate_one(req, passage, response.grounded, selection.relevance, emit)
            summary = one.summary
            done.new += summary.chunks
            done.known += summary.duplicates
            if not done.stored:
                done.best_known = bool(summary.known) and not summary.ids
            done.stored.append((passage, list(summary.ids) or list(summary.known)))
            if summary.ids and not done.new_ids:
                done.text = passage.shown
            done.new_ids.extend(summary.ids)
            if summary.known and done.known_trace < 0:
                done.known_trace = summary.known[0]
        return done

    def passage_store(self, emit: Emitter) -> PassageStore:
        """How meta-memory integrates a passage it found (a correction), reported on
        ``emit``: the new or already-known trace ids."""

        def store(req: ChaperoneRequest, passage: Passage, grounded: bool) -> list[int]:
            summary = self.integrate_one(req, passage, grounded, None, emit).summary
            return list(summary.ids) or list(summary.known)

        return store

    def integrate_one(
        self,
        req: ChaperoneRequest,
        passage: Passage,
        grounded: bool,
        relevance: float | None,
        emit: Emitter,
    ) -> PassageIntegrated:
        """Integrate one passage (under its heading) with its integrate event in the
        traces' own transaction.

        The passage is chunked, encoded and observed once
        (:meth:`~sentient_core.integrate.Integrator.prepare_texts`); its traces and
        its event are then written by one
        :meth:`~sentient_core.memory.HolographicMemory.write` (which the store may
        re-run: the event is made afresh each run), and the event is published
        once that committed.
        """
        batch = self.integrator.prepare_texts(
            [passage.shown],
            source=passage.source.id,
            tags=(req.type, req.gap_type or "gap", passage.source.kind),
        )
        if not batch.items:  # no text to store: no transaction, no event
            return PassageIntegrated(summary=IngestSummary(bytes=batch.bytes, stages=batch.stages))
        smf = self.observer.orientation()  # after the passage's chunks were observed

        def commit(tx: MemoryTxn) -> PassageIntegrated:
            summary = self.integrator.commit_texts(tx, batch)
            new = set(summary.ids)
            known = tuple(i for i in summary.known if i not in new)  # not repeats of new ones
            event = emit.make(
                IntegrateEvent,
                id=req.id,
                chunks=summary.chunks,
                known=len(known),
                source=passage.source.id,
                grounded=grounded,
                relevance=relevance,
                trace_ids=tuple(summary.ids),
                known_ids=known,
                smf=smf,
            )
            return PassageIntegrated(
                summary=summary, event=event, written=self.events.write_in(tx.txn, [event])
            )

        done = self.integrator.memory.write(commit)
        self.events.confirm(done.written, (done.event,) if done.event is not None else ())
        return done
