"""Changing traces after they were stored: update, retire, prune, decay.

Efficacy is not retrieval (SPEC §5): ``success_count``/``failure_count``
change only through :func:`update` (judged outcomes), never by recall, decay
or pruning. Nothing is ever deleted: pruning *retires* traces
(``retired=True``, masked, links removed), so no index can point at a missing
trace. Every retirement bumps the memory's generation, which makes readers in
other processes reload their mirrors.

Strength: :func:`decay` computes ``s ← 0.05 + (s − 0.05) · 2^(−Δ / half_life)``
with ``Δ = now − max(last_access, previous decay)``, so repeated decays compose
and a recall restarts a trace's clock. :func:`prune` ranks by the mirror's
strength: change strength through :func:`update` (or refresh the mirror fully
after changing records behind its back).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.memory.mirror import Mirror
from sentient_core.memory.types import (
    POLICY_DECODER,
    SECONDS_PER_DAY,
    STRENGTH_CEILING,
    STRENGTH_FLOOR,
    MemoryState,
    PrunePolicy,
    UnknownTraceError,
    encode_policy,
    read_state,
    write_state,
)
from sentient_core.memory.writer import Change, Writer
from sentient_core.store import content, traces
from sentient_core.store import links as store_links
from sentient_core.store.records import TraceRecord
from sentient_core.store.txn import Txn

__all__ = ["decay", "prune", "retire", "update"]

_IMMUTABLE = ("row", "created", "text", "primes", "retired")


def update(w: Writer, records: Sequence[TraceRecord]) -> None:
    """See :meth:`HolographicMemory.update`."""
    records = list(records)
    if not records:
        return

    def write(txn: Txn) -> list[TraceRecord]:
        for rec in records:
            old = traces.get(txn, rec.id)
            if old is None:
                raise UnknownTraceError(f"no trace {rec.id} in the store at {txn.store.path}")
            for name in _IMMUTABLE:
                if getattr(old, name) != getattr(rec, name):
                    raise ArgumentError(
                        f"trace {rec.id}: update() cannot change {name!r}"
                        + (" (use retire())" if name == "retired" else "")
                    )
            traces.update(txn, rec)
        return records

    def mirror_it(m: Mirror, done: list[TraceRecord]) -> None:
        rows = np.array([r.row for r in done], dtype=np.int64)
        m.strength[rows] = [r.strength for r in done]
        m.importance[rows] = [r.importance for r in done]
        m.last_access[rows] = [r.last_access for r in done]
        m.smf[rows] = np.array([r.smf for r in done], dtype=np.float64)

    w.commit(write, mirror_it)


def retire(txn: Txn, wanted: list[int]) -> tuple[list[int], Change]:
    """Retire the traces ``wanted`` (sorted, distinct) in ``txn`` (see
    :meth:`HolographicMemory.retire`); the ids retired and the in-RAM update owed."""
    replace = msgspec.structs.replace
    done = []
    for tid in wanted:
        rec = traces.get(txn, tid)
        if rec is None:
            raise UnknownTraceError(f"no trace {tid} in the store at {txn.store.path}")
        if rec.retired:
            continue
        traces.update(txn, replace(rec, retired=True))
        # Its text is no longer held: storing it again later is new knowledge.
        content.remove(txn, content.digest(rec.text), rec.id)
        done.append(rec)
    if not done:
        return [], Change()
    store_links.delete_touching(txn, {r.id for r in done})
    state = read_state(txn)
    state = replace(state, generation=state.generation + 1)
    write_state(txn, state)
    return [r.id for r in done], Change(masked=tuple(r.row for r in done), state=state)


def prune(w: Writer, policy: PrunePolicy) -> list[int]:
    """See :meth:`HolographicMemory.prune`."""
    if not isinstance(policy, PrunePolicy):
        raise ArgumentTypeError(f"policy must be a PrunePolicy, got {type(policy).__name__}")
    try:
        POLICY_DECODER.decode(encode_policy(policy))
    except msgspec.ValidationError as exc:
        raise ArgumentError(f"invalid PrunePolicy: {exc}") from None
    if math.isnan(policy.min_strength):
        raise ArgumentError("invalid PrunePolicy: min_strength is NaN")
    with w.lock:
        m = w.mirror
        live = np.flatnonzero(m.valid[: m.n])
        excess = live.size - policy.max_active
        if excess <= 0:
            return []
        # Rows are in id order: the last keep_newest live rows are the newest traces.
        cand = live[: max(0, live.size - policy.keep_newest)]
        cand = cand[m.strength[cand] < policy.min_strength]
        order = np.lexsort((cand, m.last_access[cand], m.strength[cand]))
        victims = cand[order][:excess]
        ids = sorted(m.row_id[victims].tolist())
        retired, _ = w.commit(lambda txn: retire(txn, ids), lambda _, out: w.apply([out[1]]))
        return retired


def decay(w: Writer, now: float | None, half_life_days: float) -> int:
    """See :meth:`HolographicMemory.decay`."""
    if not (isinstance(half_life_days, (int, float)) and half_life_days > 0):
        raise ArgumentError(f"half_life_days must be > 0, got {half_life_days!r}")
    if not math.isfinite(half_life_days):
        raise ArgumentError("half_life_days must be finite")
    now = float(w.clock() if now is None else now)
    if not math.isfinite(now) or now < 0:
        raise ArgumentError(f"now must be a finite unix time, got {now!r}")
    half_life = float(half_life_days) * SECONDS_PER_DAY
    replace = msgspec.structs.replace

    def faded(strength: float, last_access: float, since: float) -> float:
        dt = max(0.0, now - max(last_access, since))
        s = STRENGTH_FLOOR + (strength - STRENGTH_FLOOR) * 2.0 ** (-dt / half_life)
        return min(STRENGTH_CEILING, max(STRENGTH_FLOOR, s))

    with w.lock:
        m = w.mirror
        since = w.state.last_decay
        since = -math.inf if since is None else since
        live = np.flatnonzero(m.valid[: m.n])
        ref = np.maximum(m.last_access[live], since)
        cand = live[(ref < now) & (m.strength[live] > STRENGTH_FLOOR)]
        cand_ids = m.row_id[cand].tolist()

        def write(txn: Txn) -> tuple[list[TraceRecord], MemoryState]:
            state = read_state(txn)
            prev = -math.inf if state.last_decay is None else state.last_decay
            changed = []
            for tid in cand_ids:
                rec = traces.get(txn, tid)
                if rec is None or rec.retired:
                    continue
                s = faded(rec.strength, rec.last_access, prev)
                if s != rec.strength:
                    new = replace(rec, strength=s)
                    traces.update(txn, new)
                    changed.append(new)
            state = replace(state, last_decay=max(now, state.last_decay or 0.0))
            write_state(txn, state)
            return changed, state

        def mirror_it(m: Mirror, result: tuple[list[TraceRecord], MemoryState]) -> None:
            changed, state = result
            rows = np.array([r.row for r in changed], dtype=np.int64)
            m.strength[rows] = [r.strength for r in changed]
            w.state = state

        changed, _ = w.commit(write, mirror_it)
    return len(changed)
