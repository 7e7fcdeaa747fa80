"""What spreading along links buys on a Q/A set: recall with and without it, same store.

Both lists start from the same top-k hits of the default recall; spreading
(:func:`~sentient_core.memory.spreading.spread_hits`) only merges linked
neighbours in, so any change in answer@k is what the links brought or pushed
out. Links are written by reflection (the learner's), so ingest mode has none
and the two figures are equal there by construction: the report says how many
links the store held.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from sentient_core.evaluation.qa import QAItem, first_answer
from sentient_core.memory.spreading import spread_hits
from sentient_core.store import links, traces

if TYPE_CHECKING:
    from sentient_core.memory import Hit, HolographicMemory

__all__ = ["SpreadReport", "measure_spread"]


class SpreadReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Recall spread along links against plain recall (``evaluate --spread HOPS``).

    Attributes
    ----------
    hops : int
    links : int
        Undirected link pairs between active traces in the store.
    linked_traces : int
        Active traces with at least one link.
    answer_at_1, answer_at_k : float
        Plain recall.
    answer_at_1_spread, answer_at_k_spread : float
        The same hits with their linked neighbours merged in.
    neighbours_in_top_k : int
        Hits, over all questions, that came in by a link.
    lost, gained : tuple of str
        Questions answered without spreading but not with it, and the reverse.
    """

    hops: int
    links: int
    linked_traces: int
    answer_at_1: float
    answer_at_k: float
    answer_at_1_spread: float
    answer_at_k_spread: float
    neighbours_in_top_k: int
    lost: tuple[str, ...] = ()
    gained: tuple[str, ...] = ()


def _graph(memory: HolographicMemory) -> tuple[int, int]:
    """(undirected pairs, traces with a link) among active traces."""
    with memory.datastore.read() as txn:
        active = {r.id for r in traces.iter_range(txn) if not r.retired}
        pairs = {
            (min(lk.src, lk.dst), max(lk.src, lk.dst))
            for lk in links.iter_from(txn)
            if lk.src in active and lk.dst in active
        }
    return len(pairs), len({i for p in pairs for i in p})


def _rank(texts: Sequence[str], answers: Sequence[str]) -> int | None:
    return next((i + 1 for i, t in enumerate(texts) if first_answer(t, answers)), None)


def measure_spread(
    memory: HolographicMemory,
    items: Sequence[QAItem],
    k: int,
    hits: Callable[[str, int], Sequence[Hit]],
    hops: int,
) -> SpreadReport:
    """answer@1/@k of ``hits(question, k)`` and of the same hits spread ``hops`` link steps."""
    n_links, linked = _graph(memory)
    at1 = atk = at1_s = atk_s = via_links = 0
    lost: list[str] = []
    gained: list[str] = []
    for item in items:
        top = list(hits(item.q, k))
        spread = spread_hits(memory, top, k, hops)
        seeds = {h.record.id for h in top}
        via_links += sum(1 for h in spread if h.record.id not in seeds)
        plain_rank = _rank([h.record.text for h in top], item.answers)
        spread_rank = _rank([h.record.text for h in spread], item.answers)
        at1 += plain_rank == 1
        atk += plain_rank is not None
        at1_s += spread_rank == 1
        atk_s += spread_rank is not None
        if plain_rank is not None and spread_rank is None:
            lost.append(item.q)
        elif spread_rank is not None and plain_rank is None:
            gained.append(item.q)
    n = len(items) or 1
    return SpreadReport(
        hops=hops,
        links=n_links,
        linked_traces=linked,
        answer_at_1=at1 / n,
        answer_at_k=atk / n,
        answer_at_1_spread=at1_s / n,
        answer_at_k_spread=atk_s / n,
        neighbours_in_top_k=via_links,
        lost=tuple(lost),
        gained=tuple(gained),
    )
