"""All meta-memory components on one memory, and the one call that feeds them a surprise.

:meth:`MetaMemory.observe` records a surprise event and lets it change
everything it should in ONE write transaction: the event itself, the credit
(and so the strength) of the wrong and the correcting trace — retiring a trace
at the floor —, the weights of the wrong and the correcting source, and the
episode count of its wisdom cluster. After the commit the wisdom cluster is
offered its next promotion, citing the domain's resolved debts (it happens
only if every gate holds).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import msgspec

from sentient_core.metamemory.advice import WisdomAdvisor
from sentient_core.metamemory.base import CreditConflictError
from sentient_core.metamemory.credit import CreditBook, CreditResult, signals_of
from sentient_core.metamemory.debts import DebtBook, DebtRecord
from sentient_core.metamemory.scorer import JudgedOutcome, ScorerModel, ScorerSnapshot
from sentient_core.metamemory.sources import SourceDecision, SourceWeights
from sentient_core.metamemory.surprise import EVENTS, SurpriseEvent, SurpriseLog, check_event
from sentient_core.metamemory.wisdom import WisdomBook, WisdomRecord

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.memory import HolographicMemory, MemoryTxn

__all__ = ["MetaMemory", "Observation"]


class Observation(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What one observed surprise event changed."""

    event: SurpriseEvent
    credit: CreditResult
    sources: tuple[SourceDecision, ...]
    wisdom: WisdomRecord


class _Observed(msgspec.Struct, frozen=True):
    """What :meth:`MetaMemory.observe`'s transaction wrote besides credit: the
    recorded event, the source decisions, the wisdom cluster before and after."""

    event: SurpriseEvent
    decisions: tuple[SourceDecision, ...]
    before: WisdomRecord | None
    cluster: WisdomRecord


class MetaMemory:
    """Surprise log, credit, source weights, debts, wisdom and the scorer of one memory.

    Parameters
    ----------
    memory : HolographicMemory
        On a writable store.
    emit : Emitter, optional
        Every component publishes ``metamemory`` events through it.
    clock : callable

    Attributes
    ----------
    surprises : SurpriseLog
    credit : CreditBook
    sources : SourceWeights
    debts : DebtBook
    wisdom : WisdomBook
    scorer : ScorerModel
        Loaded from the store's snapshots.
    """

    def __init__(
        self,
        memory: HolographicMemory,
        *,
        emit: Emitter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        store = memory.datastore
        self._memory = memory
        self.memory = memory
        self._store = store
        self.surprises = SurpriseLog(store, emit=emit, clock=clock)
        self.credit = CreditBook(memory, emit=emit, clock=clock)
        self.sources = SourceWeights(store, emit=emit, clock=clock)
        self.debts = DebtBook(store, emit=emit, clock=clock)
        self.wisdom = WisdomBook(store, emit=emit, clock=clock)
        self.scorer = ScorerModel.load(store, emit=emit)
        self.advisor = WisdomAdvisor(store, self.sources, self.wisdom, self.advance, emit=emit)
        """Wisdom's advice on source weights (routing, priors, the recall factor)."""

    def observe(self, event: SurpriseEvent) -> Observation:
        """Record ``event`` and apply it everywhere, in one write transaction.

        Raises
        ------
        ArgumentError
            The event is out of bounds.
        CreditConflictError
            Another writer changed a trace or the log meanwhile; nothing was written.
        """
        check_event(event)
        with self._store.read() as txn:
            planned = msgspec.structs.replace(event, id=EVENTS.next_id(txn))
        plan = self.credit.plan(signals_of([planned]))

        def write(tx: MemoryTxn) -> _Observed:
            self.credit.write_in(tx, plan)
            stored = self.surprises.record_in(tx.txn, event)
            if stored.id != planned.id:
                raise CreditConflictError(
                    f"surprise log moved while observing (id {stored.id}, planned {planned.id})"
                )
            decided = self.sources.observe_in(tx.txn, stored)
            before, cluster = self.wisdom.observe_in(tx.txn, stored)
            return _Observed(stored, tuple(decided), before, cluster)

        seen = self._memory.write(write)
        self.credit.committed(plan)
        self.surprises.noted([seen.event])
        self.sources.noted(seen.decisions)
        self.wisdom.noted(seen.before, seen.cluster)
        cluster = self.advance(seen.cluster) or seen.cluster
        return Observation(
            event=seen.event, credit=plan.result, sources=seen.decisions, wisdom=cluster
        )

    def advance(self, record: WisdomRecord) -> WisdomRecord | None:
        """Offer a wisdom record its next promotion, citing its domain's resolved debts
        (a provisional one keeps the debts it cited); None if a gate does not hold."""
        if record.state == "candidate":
            cited = [d.id for d in self.debts.debts(status="resolved", domain=record.domain)]
            return self.wisdom.advance(record.id, cited) if cited else None
        if record.state == "provisional":
            return self.wisdom.advance(record.id)
        return None

    def reopen_debt(
        self, debt_id: int, reason: str = "", *, hypothesis: str = ""
    ) -> tuple[DebtRecord, list[WisdomRecord]]:
        """Reopen a debt (``hypothesis``: a new value joining its hypotheses) and demote
        the wisdom that cited it; returns both."""
        debt = self.debts.reopen(debt_id, reason, hypothesis=hypothesis)
        return debt, self.wisdom.debt_reopened(debt_id)

    def record_outcome(self, trace_ids: Iterable[int], outcome: str) -> int:
        """A judged outcome on the traces that produced it (see :func:`record_outcome`)."""
        return self.credit.record_outcome(trace_ids, outcome)

    def train_scorer(self, outcomes: Sequence[JudgedOutcome], now: float) -> ScorerSnapshot:
        """One scorer batch, snapshot written (see :meth:`ScorerModel.train`)."""
        return self.scorer.train(self._store, outcomes, now)

    def counters(self) -> dict[str, float]:
        """Every component's counters in one flat dict (``component.counter``)."""
        out: dict[str, float] = {}
        for name, part in (
            ("surprise", self.surprises),
            ("credit", self.credit),
            ("sources", self.sources),
            ("debts", self.debts),
            ("wisdom", self.wisdom),
            ("scorer", self.scorer),
        ):
            out.update({f"{name}.{k}": v for k, v in part.counters().items()})
        return out
