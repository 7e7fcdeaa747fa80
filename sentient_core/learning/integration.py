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
from sentient_core.learning.passages import passages_of, select
from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, Passage

if TYPE_CHECKING:
    from sentient_core.autonomy.judge import Judge
    from sentient_core.integrate import IngestSummary, Integrator
    from sentient_core.learning.chaperone import Chaperone
    from sentient_core.observer import Observer
    from sentient_core.store.records import TraceRecord
    from sentient_core.store.txn import Txn

__all__ = ["AnswerIntegration", "Integrated"]


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
        question = req.question if req.type == "question" else ""
        selection = select(
            question,
            passages_of(req, response),
            stats=self.chaperone.term_stats() if question else None,
            threshold=self.judge.relevant,
        )
        done = Integrated(relevance=selection.relevance)
        for passage in selection.keep:
            summary = self.integrate_one(req, passage, response.grounded, selection.relevance, emit)
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

    def integrate_one(
        self,
        req: ChaperoneRequest,
        passage: Passage,
        grounded: bool,
        relevance: float | None,
        emit: Emitter,
    ) -> IngestSummary:
        """Integrate one passage (under its heading) with its integrate event in the
        traces' own transaction; returns the integrator's summary."""
        audit = _IntegrateAudit(self, req, passage.source.id, grounded, relevance, emit)
        summary = self.integrator.ingest_texts(
            [passage.shown],
            source=passage.source.id,
            tags=(req.type, req.gap_type or "gap", passage.source.kind),
            also=audit,
        )
        self.events.confirm(audit.written, audit.events)
        return summary


class _IntegrateAudit:
    """The integrate event of one passage, written in its traces' own transaction.

    Memory calls it inside that transaction (possibly more than once, if the
    store re-runs it after growing its map); what the last run wrote is kept
    here for :meth:`EventBus.confirm` once the transaction committed.
    """

    def __init__(
        self,
        owner: AnswerIntegration,
        req: ChaperoneRequest,
        source: str,
        grounded: bool,
        relevance: float | None,
        emit: Emitter,
    ) -> None:
        self.owner = owner
        self.req = req
        self.source = source
        self.grounded = grounded
        self.relevance = relevance
        self.emit = emit
        self.written = 0
        self.events: tuple[IntegrateEvent, ...] = ()

    def __call__(self, txn: Txn, stored: list[TraceRecord], known_ids: list[int]) -> None:
        event = self.emit.make(
            IntegrateEvent,
            id=self.req.id,
            chunks=len(stored),
            known=len(known_ids),
            source=self.source,
            grounded=self.grounded,
            relevance=self.relevance,
            trace_ids=tuple(r.id for r in stored),
            known_ids=tuple(known_ids),
            smf=self.owner.observer.orientation(),
        )
        self.written = self.owner.events.write_in(txn, [event])
        self.events = (event,)
