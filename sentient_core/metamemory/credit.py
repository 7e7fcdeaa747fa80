"""Memory credit: surprise events change trace strength slowly, in both directions.

Where the state lives
    Strength is a field of the :class:`~sentient_core.store.records.TraceRecord`
    (recall, decay and pruning read it there). The hysteresis behind it —
    rolling credit, streak, streak direction (:mod:`sentient_kernels.credit`) — is kept
    in RAM as three arrays indexed by code row (row-aligned with the memory's
    mirror) and persisted as one :class:`CreditRecord` per trace that ever
    received a signal, in the ``scorer`` sub-database (the learned-ranking
    state) under ``b"credit/" + u64(trace id)`` (:data:`CREDITS`); floor
    records under ``b"floor/" + u64(trace id)`` (:data:`FLOORS`). Not on the
    trace record: that would widen every trace of the store (and its schema)
    for the few traces ever judged, and the record type belongs to the store
    layer other work is changing.

One batch, one transaction
    :meth:`CreditBook.apply` turns signals into strength changes with ONE
    call of :func:`sentient_kernels.credit.apply_events` per round (a round holds at
    most one signal per trace, so the gate openings of each signal can be
    told apart; usually one round). It is three steps: :meth:`CreditBook.plan`
    computes the batch from a snapshot (no RAM state changes);
    :meth:`CreditBook.write_in` writes it inside a
    :meth:`HolographicMemory.write` — the new strengths, the credit records, the
    floor records and the retirement of the traces at the floor, with whatever
    else the caller writes there (the surprise events themselves, say), all in
    one transaction; :meth:`CreditBook.committed` then updates the RAM arrays,
    counters and events. The memory's mirror takes the new strengths through
    :meth:`HolographicMemory.update` (the same values written again; if the
    process dies in between, the mirror is rebuilt from the store at the next
    open anyway).

The floor
    A trace pushed to the floor (strength 0.05) by a negative gate opening is
    retired — nothing is deleted — with a
    :class:`FloorRecord` saying why: superseded by
    the correcting trace of the last surprise that pushed it (when that trace
    is active), or retired without a successor. (A :class:`LinkRecord` cannot
    carry this: it has no kind or reason, and retiring a trace deletes every
    link touching it.)

Efficacy is not retrieval
    :func:`record_outcome` is the only place that changes
    ``success_count``/``failure_count``, from judged outcomes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Annotated

import msgspec
import numpy as np

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.memory.types import UnknownTraceError
from sentient_core.metamemory.base import Counts, CreditConflictError, check_unit, publish
from sentient_core.metamemory.credit_records import CREDITS, FLOORS, CreditRecord, FloorRecord
from sentient_core.store import traces
from sentient_core.store.records import TraceRecord
from sentient_core.vocab import OUTCOMES
from sentient_kernels import credit as credit_kernels

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.memory import HolographicMemory, MemoryTxn
    from sentient_core.metamemory.surprise import SurpriseEvent
    from sentient_core.store.txn import Txn

__all__ = [
    "CREDITS",
    "FLOORS",
    "RUN_TO_FULL",
    "CreditBook",
    "CreditPlan",
    "CreditRecord",
    "CreditResult",
    "CreditSignal",
    "FloorRecord",
    "ranked_credit",
    "record_outcome",
    "signals_of",
]

RUN_TO_FULL = 3
"""Consistent negative signals past the first that take a trace's evidence against it to
its full weight in the ranking (:func:`ranked_credit`)."""


def ranked_credit(rec: CreditRecord) -> float:
    """The credit recall ranks a trace by: the evidence against it, in [-1, 0].

    It keeps the promise strength keeps (the hysteresis of :mod:`sentient_kernels.credit`):
    one signal moves nothing; from a run of ``GATE_STREAK`` consistent negative signals
    it is ``-(streak - 1) / RUN_TO_FULL`` (down to -1), so the penalty grows with each
    consistent signal, where the rolling credit itself shrinks every time the gate moves
    strength (one ``feedback --wrong`` ranked a trace down by 0.300, the second by
    0.194). A run of positive signals is 0 (evidence for a trace is its strength).
    """
    if rec.last_dir < 0 and rec.streak >= credit_kernels.GATE_STREAK:
        return -min(1.0, (rec.streak - 1) / RUN_TO_FULL)
    return 0.0


STRENGTH_FLOOR = credit_kernels.STRENGTH_MIN


class CreditSignal(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One credit signal: trace ``trace`` was right (+1) or wrong (-1) with surprise ``magnitude``.

    Attributes
    ----------
    trace : int
    direction : int
        +1 or -1.
    magnitude : float
        Surprise ``s`` in [0, 1].
    surprise_id : int
        The surprise event it comes from (-1: none).
    corrected_by : int
        For a -1 signal: the trace that held the right answer (-1: none).
    """

    trace: Annotated[int, msgspec.Meta(ge=0)]
    direction: Annotated[int, msgspec.Meta(ge=-1, le=1)]
    magnitude: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
    surprise_id: Annotated[int, msgspec.Meta(ge=-1)] = -1
    corrected_by: Annotated[int, msgspec.Meta(ge=-1)] = -1


class CreditResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What one :meth:`CreditBook.apply` did.

    Attributes
    ----------
    applied : int
        Signals applied.
    skipped : tuple of int
        Traces whose signals were dropped (unknown or already retired).
    signals : int
        Applied signals above the noise threshold (``s > 0.20``).
    gate_opens : int
        Signals that opened the gate (strength moved, or was already at the bound).
    changes : tuple of (int, float, float)
        ``(trace, before, after)`` for every trace whose strength changed.
    retired : tuple of int
        Traces retired at the floor.
    superseded : tuple of (int, int)
        ``(old, new)`` for the retired traces a correcting trace superseded.
    deltas : tuple of float
        The strength change each applied signal caused, in order.
    """

    applied: int = 0
    skipped: tuple[int, ...] = ()
    signals: int = 0
    gate_opens: int = 0
    changes: tuple[tuple[int, float, float], ...] = ()
    retired: tuple[int, ...] = ()
    superseded: tuple[tuple[int, int], ...] = ()
    deltas: tuple[float, ...] = ()


def signals_of(events: Sequence[SurpriseEvent]) -> list[CreditSignal]:
    """The credit signals of surprise events, in order: per event, the wrong memory
    (``source_memory``, -1) then the correcting memory (``correcting_memory``, +1)."""
    out = []
    for e in events:
        if e.source_memory >= 0:
            out.append(
                CreditSignal(
                    trace=e.source_memory,
                    direction=-1,
                    magnitude=e.magnitude,
                    surprise_id=e.id,
                    corrected_by=e.correcting_memory,
                )
            )
        if e.correcting_memory >= 0 and e.correcting_memory != e.source_memory:
            out.append(
                CreditSignal(
                    trace=e.correcting_memory, direction=1, magnitude=e.magnitude, surprise_id=e.id
                )
            )
    return out


def _check_signals(signals: Iterable[CreditSignal]) -> list[CreditSignal]:
    out = []
    for i, sig in enumerate(signals):
        if not isinstance(sig, CreditSignal):
            raise ArgumentTypeError(
                f"signals[{i}] must be a CreditSignal, got {type(sig).__name__}"
            )
        if sig.direction not in (-1, 1):
            raise ArgumentError(f"signals[{i}].direction must be -1 or +1, got {sig.direction}")
        if isinstance(sig.trace, bool) or not isinstance(sig.trace, int) or sig.trace < 0:
            raise ArgumentError(f"signals[{i}].trace must be a trace id, got {sig.trace!r}")
        check_unit(f"signals[{i}].magnitude", sig.magnitude)
        out.append(sig)
    return out


class CreditPlan(msgspec.Struct, frozen=True):
    """A computed batch (:meth:`CreditBook.plan`), written by one transaction
    (:meth:`CreditBook.write_in`); no RAM state is touched before it committed."""

    result: CreditResult
    before: dict[int, TraceRecord]
    strength: dict[int, float]
    credit_records: tuple[CreditRecord, ...]
    floors: tuple[FloorRecord, ...]


class CreditBook:
    """Credit state of a memory's traces (see the module docstring).

    Parameters
    ----------
    memory : HolographicMemory
        Whose traces' strength the book changes (a writable store).
    emit : Emitter, optional
        Publishes ``metamemory`` events (strength changes, retirements).
    clock : callable
        Unix time for the records.

    Counters: ``batches``, ``signals_in``, ``applied``, ``skipped``, ``noise``
    (signals at or below s = 0.20), ``gate_opens``, ``strength_up``,
    ``strength_down``, ``retired``, ``superseded``, ``outcomes.<outcome>``.
    """

    def __init__(
        self,
        memory: HolographicMemory,
        *,
        emit: Emitter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._memory = memory
        self._store = memory.datastore
        self._emit = emit
        self._clock = clock
        self._counts = Counts(
            (
                "batches",
                "signals_in",
                "applied",
                "skipped",
                "noise",
                "gate_opens",
                "strength_up",
                "strength_down",
                "retired",
                "superseded",
            )
        )
        self.credit = np.zeros(0, dtype=np.float64)
        self.streak = np.zeros(0, dtype=np.int64)
        self.last_dir = np.zeros(0, dtype=np.int8)
        self._events: dict[int, int] = {}
        self.version = 0
        """Bumped whenever this book's credit arrays change (a cache key for readers)."""
        with self._store.read() as txn:
            self._grow(txn.counters().row_count)
            for rec in CREDITS.iter(txn):
                self._grow(rec.row + 1)
                self.credit[rec.row] = rec.credit
                self.streak[rec.row] = rec.streak
                self.last_dir[rec.row] = rec.last_dir
                self._events[rec.trace] = rec.events

    # -- state -------------------------------------------------------------------------------

    def _grow(self, rows: int) -> None:
        """Make the arrays at least ``rows`` long (new rows: credit 0, no streak)."""
        n = self.credit.shape[0]
        if rows <= n:
            return
        size = max(rows, 2 * n, 64)
        self.credit = np.concatenate([self.credit, np.zeros(size - n)])
        self.streak = np.concatenate([self.streak, np.zeros(size - n, dtype=np.int64)])
        self.last_dir = np.concatenate([self.last_dir, np.zeros(size - n, dtype=np.int8)])

    def state(self, trace_id: int) -> tuple[float, int, int]:
        """``(credit, streak, last_dir)`` of a trace (zeros before its first signal)."""
        rec = self._memory.get(trace_id)
        if rec is None:
            raise UnknownTraceError(f"no trace {trace_id}")
        if rec.row >= self.credit.shape[0]:
            return 0.0, 0, 0
        return float(self.credit[rec.row]), int(self.streak[rec.row]), int(self.last_dir[rec.row])

    def floor_record(self, trace_id: int) -> FloorRecord | None:
        """Why ``trace_id`` was retired at the floor, or None."""
        with self._store.read() as txn:
            return FLOORS.get(txn, trace_id)

    def counters(self) -> dict[str, float]:
        """What this book did in this process."""
        return self._counts.as_dict()

    # -- applying ----------------------------------------------------------------------------

    def apply_events(self, events: Sequence[SurpriseEvent]) -> CreditResult:
        """Apply the signals of recorded surprise events (:func:`signals_of`)."""
        return self.apply(signals_of(events))

    def apply(self, signals: Iterable[CreditSignal]) -> CreditResult:
        """Apply credit signals in order, in one write transaction.

        Parameters
        ----------
        signals : iterable of CreditSignal

        Returns
        -------
        CreditResult

        Raises
        ------
        CreditConflictError
            A trace's strength or status changed between planning and writing
            (another writer); nothing was written.
        """
        plan = self.plan(signals)
        self._memory.write(lambda tx: self.write_in(tx, plan))
        self.committed(plan)
        return plan.result

    def plan(self, signals: Iterable[CreditSignal]) -> CreditPlan:
        """Compute what ``signals`` change, from a snapshot; nothing is written.

        Write the plan with :meth:`write_in` inside a
        :meth:`HolographicMemory.write`, then call :meth:`committed`.
        """
        sigs = _check_signals(signals)
        self._counts.add("batches")
        self._counts.add("signals_in", len(sigs))
        with self._store.read() as txn:
            self._grow(txn.counters().row_count)
            before = {}
            for tid in dict.fromkeys(s.trace for s in sigs):
                rec = traces.get(txn, tid)
                if rec is not None and not rec.retired:
                    before[tid] = rec
        return self._plan(sigs, before)

    def write_in(self, tx: MemoryTxn, plan: CreditPlan) -> None:
        """Write ``plan`` in ``tx``: retire the traces at the floor, then the new
        strengths, credit records and floor records. Re-runnable (it writes only
        through ``tx``).

        Raises
        ------
        CreditConflictError
            A planned trace changed since the plan's snapshot (the transaction
            must not commit).
        """
        floor_ids = [f.trace for f in plan.floors]
        tx.retire(floor_ids)
        self._write(tx.txn, plan, set(floor_ids))

    def _plan(self, sigs: list[CreditSignal], before: dict[int, TraceRecord]) -> CreditPlan:
        live = [s for s in sigs if s.trace in before]
        skipped = tuple(dict.fromkeys(s.trace for s in sigs if s.trace not in before))
        order = list(dict.fromkeys(s.trace for s in live))
        slot = {tid: j for j, tid in enumerate(order)}
        rows = np.array([before[t].row for t in order], dtype=np.int64)
        state = credit_kernels.CreditState(
            self.credit[rows].copy(),
            self.streak[rows].copy(),
            self.last_dir[rows].copy(),
            np.array([before[t].strength for t in order], dtype=np.float64),
        )
        deltas = np.zeros(len(live))
        opened = np.zeros(len(live), dtype=bool)
        rounds: list[list[int]] = []
        seen: dict[int, int] = {}
        for i, s in enumerate(live):
            r = seen.get(s.trace, 0)
            seen[s.trace] = r + 1
            if r == len(rounds):
                rounds.append([])
            rounds[r].append(i)
        for members in rounds:
            idx = np.array([slot[live[i].trace] for i in members], dtype=np.int64)
            direction = np.array([live[i].direction for i in members], dtype=np.int8)
            magnitude = np.array([live[i].magnitude for i in members], dtype=np.float64)
            undecayed = credit_kernels.CREDIT_DECAY * state.credit[idx] + direction * (
                credit_kernels.evidence(magnitude)
            )
            deltas[members] = credit_kernels.apply_events(state, idx, direction, magnitude)
            # A gate opening keeps 0.35 of the credit; otherwise it stays as computed.
            opened[members] = np.abs(state.credit[idx]) < 0.5 * np.abs(undecayed)
        now = float(self._clock())
        strength = {t: float(state.strength[slot[t]]) for t in order}
        records = tuple(
            CreditRecord(
                trace=t,
                row=before[t].row,
                credit=float(state.credit[slot[t]]),
                streak=int(state.streak[slot[t]]),
                last_dir=int(state.last_dir[slot[t]]),
                events=self._events.get(t, 0) + seen[t],
                updated=now,
            )
            for t in order
        )
        floors = self._floors(live, opened, strength, before, now)
        result = CreditResult(
            applied=len(live),
            skipped=skipped,
            signals=int(sum(1 for s in live if s.magnitude > credit_kernels.EVIDENCE_THRESHOLD)),
            gate_opens=int(opened.sum()),
            changes=tuple(
                (t, before[t].strength, strength[t])
                for t in order
                if strength[t] != before[t].strength
            ),
            retired=tuple(f.trace for f in floors),
            superseded=tuple((f.trace, f.superseded_by) for f in floors if f.superseded_by >= 0),
            deltas=tuple(float(d) for d in deltas),
        )
        return CreditPlan(result, before, strength, records, floors)

    def _floors(
        self,
        live: list[CreditSignal],
        opened: np.ndarray,
        strength: dict[int, float],
        before: dict[int, TraceRecord],
        now: float,
    ) -> tuple[FloorRecord, ...]:
        """Floor records of the traces a negative gate opening left at the floor."""
        pushed: dict[int, list[CreditSignal]] = {}
        at_floor: set[int] = set()
        for i, s in enumerate(live):
            if s.direction < 0:
                pushed.setdefault(s.trace, []).append(s)
                if opened[i] and strength[s.trace] <= STRENGTH_FLOOR:
                    at_floor.add(s.trace)
        floors = []
        for tid in sorted(at_floor):
            successor = next(
                (
                    s.corrected_by
                    for s in reversed(pushed[tid])
                    if s.corrected_by >= 0
                    and s.corrected_by != tid
                    and s.corrected_by in before
                    and s.corrected_by not in at_floor
                ),
                -1,
            )
            ids = tuple(dict.fromkeys(s.surprise_id for s in pushed[tid] if s.surprise_id >= 0))
            why = (
                f"strength reached the floor {STRENGTH_FLOOR} after {len(pushed[tid])} negative"
                f" credit signal(s) in this batch (surprise events {list(ids)[-8:]})"
            )
            why += (
                f"; superseded by trace {successor}, which held the correction"
                if successor >= 0
                else "; retired without a successor (no active correcting trace)"
            )
            floors.append(
                FloorRecord(
                    trace=tid,
                    superseded_by=successor,
                    reason=why,
                    surprise_ids=ids[-64:],
                    strength=strength[tid],
                    time=now,
                )
            )
        return tuple(floors)

    def _write(self, txn: Txn, plan: CreditPlan, floor_ids: set[int]) -> None:
        replace = msgspec.structs.replace
        for tid, old in plan.before.items():
            rec = traces.get(txn, tid)
            if (
                rec is None
                or rec.strength != old.strength
                or (rec.retired and tid not in floor_ids)
            ):
                raise CreditConflictError(
                    f"trace {tid} changed while its credit was computed; nothing was written"
                )
            new = plan.strength[tid]
            if new != rec.strength:
                traces.update(txn, replace(rec, strength=new))
        for record in plan.credit_records:
            CREDITS.put(txn, record)
        for floor in plan.floors:
            FLOORS.put(txn, floor)

    def committed(self, plan: CreditPlan) -> None:
        """After :meth:`write_in`'s transaction committed: RAM arrays, the mirror,
        counters, events."""
        self.version += 1
        for rec in plan.credit_records:
            self.credit[rec.row] = rec.credit
            self.streak[rec.row] = rec.streak
            self.last_dir[rec.row] = rec.last_dir
            self._events[rec.trace] = rec.events
        result = plan.result
        retired = set(result.retired)
        changed = [
            msgspec.structs.replace(plan.before[t], strength=after)
            for t, _, after in result.changes
            if t not in retired
        ]
        if changed:
            # The mirror takes strength through update(); the values are already stored.
            fresh = [self._memory.get(r.id) for r in changed]
            self._memory.update([r for r in fresh if r is not None])
        c = self._counts
        c.add("applied", result.applied)
        c.add("skipped", len(result.skipped))
        c.add("noise", result.applied - result.signals)
        c.add("gate_opens", result.gate_opens)
        for tid, old, new in result.changes:
            c.add("strength_up" if new > old else "strength_down")
            publish(
                self._emit,
                "credit",
                "strength",
                subject=f"trace:{tid}",
                before=old,
                after=new,
            )
        for floor in plan.floors:
            c.add("retired")
            if floor.superseded_by >= 0:
                c.add("superseded")
            publish(
                self._emit,
                "credit",
                "superseded" if floor.superseded_by >= 0 else "retired",
                subject=f"trace:{floor.trace}",
                before=plan.before[floor.trace].strength,
                after=floor.strength,
                detail=floor.reason[:500],
            )

    # -- judged outcomes ---------------------------------------------------------------------

    def record_outcome(self, trace_ids: Iterable[int], outcome: str) -> int:
        """See :func:`record_outcome` (counted here as ``outcomes.<outcome>``)."""
        n = record_outcome(self._memory, trace_ids, outcome)
        self._counts.add(f"outcomes.{outcome}")
        return n


def record_outcome(memory: HolographicMemory, trace_ids: Iterable[int], outcome: str) -> int:
    """Count a judged outcome on the traces that produced it (one write transaction).

    ``success`` bumps ``success_count``, ``failure`` bumps ``failure_count``;
    ``could_not_verify`` and ``not_applicable`` change nothing (a missing
    verdict is not evidence). Retired traces are counted too (their history
    stays true). Returns how many traces changed.

    Raises
    ------
    ArgumentError
        ``outcome`` is not one of :data:`~sentient_core.vocab.OUTCOMES`.
    UnknownTraceError
        A trace id is not in the store.
    """
    if outcome not in OUTCOMES:
        raise ArgumentError(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    ids = list(dict.fromkeys(trace_ids))
    if outcome not in ("success", "failure") or not ids:
        return 0
    records = []
    for tid in ids:
        rec = memory.get(tid)
        if rec is None:
            raise UnknownTraceError(f"no trace {tid}")
        if outcome == "success":
            records.append(msgspec.structs.replace(rec, success_count=rec.success_count + 1))
        else:
            records.append(msgspec.structs.replace(rec, failure_count=rec.failure_count + 1))
    memory.update(records)
    return len(records)
