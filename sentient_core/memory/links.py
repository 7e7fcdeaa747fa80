"""Links between traces and spreading activation over them.

Links are directed records in the store (:mod:`sentient_core.store.links`);
:meth:`HolographicMemory.link` writes both directions by default
(entanglement is symmetric), one with ``directed=True``. Weights are in
(0, 1]. Spreading activation reads the links from one store snapshot; there
is no in-RAM link index to keep in step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from sentient_core.errors import ArgumentError
from sentient_core.memory.types import (
    RetiredTraceError,
    UnknownTraceError,
    check_ids,
    check_k,
)
from sentient_core.store import links as store_links
from sentient_core.store import traces
from sentient_core.store.records import LinkRecord, TraceRecord
from sentient_core.store.txn import Txn

if TYPE_CHECKING:
    from sentient_core.memory.writer import Writer

__all__ = ["active_record", "link", "links_of", "spread", "unlink"]


def active_record(txn: Txn, trace_id: int) -> TraceRecord:
    """The trace ``trace_id``, which must exist and be active."""
    rec = traces.get(txn, trace_id)
    if rec is None:
        raise UnknownTraceError(f"no trace {trace_id} in the store at {txn.store.path}")
    if rec.retired:
        raise RetiredTraceError(f"trace {trace_id} is retired")
    return rec


def link(w: Writer, a: int, b: int, weight: float, directed: bool) -> list[LinkRecord]:
    """See :meth:`HolographicMemory.link`."""
    a, b = check_ids((a, b), "link ends")
    if a == b:
        raise ArgumentError(f"cannot link trace {a} to itself")
    if not (isinstance(weight, (int, float)) and 0.0 < weight <= 1.0):
        raise ArgumentError(f"weight must be in (0, 1], got {weight!r}")
    now = float(w.clock())
    pairs = [(a, b)] if directed else [(a, b), (b, a)]
    made = [LinkRecord(src=s, dst=d, weight=float(weight), created=now) for s, d in pairs]

    def write(txn: Txn) -> list[LinkRecord]:
        for end in (a, b):
            active_record(txn, end)
        for one in made:
            store_links.put(txn, one)
        return made

    return w.commit(write)


def unlink(w: Writer, a: int, b: int, directed: bool) -> int:
    """See :meth:`HolographicMemory.unlink`."""
    a, b = check_ids((a, b), "link ends")
    pairs = [(a, b)] if directed else [(a, b), (b, a)]
    return w.commit(lambda txn: sum(store_links.delete(txn, s, d) for s, d in pairs))


def links_of(w: Writer, trace_id: int) -> list[LinkRecord]:
    """See :meth:`HolographicMemory.links`."""
    (tid,) = check_ids((trace_id,), "trace_id")
    with w.store.read() as txn:
        if not traces.exists(txn, tid):
            raise UnknownTraceError(f"no trace {tid} in the store at {txn.store.path}")
        return list(store_links.iter_from(txn, tid))


def spread(
    w: Writer, seed_ids: Iterable[int], hops: int, decay: float, limit: int
) -> list[tuple[int, float]]:
    """See :meth:`HolographicMemory.spread`."""
    seeds = sorted(set(check_ids(seed_ids, "seed_ids")))
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
        raise ArgumentError(f"hops must be an integer >= 0, got {hops!r}")
    if not (isinstance(decay, (int, float)) and 0.0 < decay <= 1.0):
        raise ArgumentError(f"decay must be in (0, 1], got {decay!r}")
    limit = check_k("limit", limit)
    total: dict[int, float] = {}
    with w.store.read() as txn:
        for s in seeds:
            if not traces.exists(txn, s):
                raise UnknownTraceError(f"no trace {s} in the store at {txn.store.path}")
        frontier = dict.fromkeys(seeds, 1.0)
        for _ in range(hops):
            received: dict[int, float] = {}
            for src in sorted(frontier):
                push = frontier[src] * decay
                for one in store_links.iter_from(txn, src):
                    received[one.dst] = received.get(one.dst, 0.0) + push * one.weight
            for dst in sorted(received):
                total[dst] = total.get(dst, 0.0) + received[dst]
            frontier = received
            if not frontier:
                break
    seed_set = set(seeds)
    out = [(i, a) for i, a in total.items() if i not in seed_set]
    out.sort(key=lambda t: (-t[1], t[0]))
    return out[:limit]
