"""One recall: the rankings behind one interface, and the call everyone makes.

:func:`recall` is what :meth:`Core.recall <sentient_core.core.Core.recall>`,
``cli.py recall`` and ``GET /recall`` run, with the same default
(:data:`DEFAULT_RANK`, the learned scorer). A ranking is anything with a
``hits(query, k, threshold=..., touch=...)`` method (:class:`Ranking`); the
four shipped ones are named:

``scored``  the learned scorer over the BM25 + cosine hybrid, with what
            meta-memory learned (credit, source weights, debts) and its best
            candidates re-ranked by question–passage relevance
``hybrid``  BM25 plus the code cosine
``bm25``    BM25 alone
``cosine``  the cosine of the codes (the only rank for a code query)

Pass a name, or your own :class:`Ranking` object. ``spread`` (link hops, 0 = off)
merges the hits' linked neighbours in (:mod:`sentient_core.memory.spreading`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from sentient_core.errors import ArgumentError

if TYPE_CHECKING:
    from sentient_core.memory import Hit, HolographicMemory
    from sentient_core.metamemory import MetaMemory
    from sentient_core.metamemory.recall import ScoredRecall

__all__ = ["DEFAULT_RANK", "RANKS", "MemoryRanking", "Ranking", "ScoredRanking", "recall"]

RANKS = ("scored", "hybrid", "bm25", "cosine")
DEFAULT_RANK = "scored"


@runtime_checkable
class Ranking(Protocol):
    """How recall orders memory's traces for a query."""

    name: str

    def hits(
        self, query: str | np.ndarray, k: int, *, threshold: float, touch: bool
    ) -> list[Hit]: ...


class MemoryRanking:
    """``hybrid``, ``bm25`` or ``cosine``: memory's own exact rankings."""

    def __init__(self, memory: HolographicMemory, name: str) -> None:
        if name not in ("hybrid", "bm25", "cosine"):
            raise ArgumentError(f"memory ranks by hybrid, bm25 or cosine, not {name!r}")
        self.memory = memory
        self.name = name

    def hits(self, query: str | np.ndarray, k: int, *, threshold: float, touch: bool) -> list[Hit]:
        return self.memory.recall(query, k=k, threshold=threshold, touch=touch, rank=self.name)


class ScoredRanking:
    """``scored``: the learned scorer with meta-memory's factors (one factor table,
    rebuilt when memory, the scorer or the credit changed)."""

    name = "scored"

    def __init__(self, memory: HolographicMemory, meta: MetaMemory) -> None:
        from sentient_core.metamemory.recall import ScoredRecall

        self.memory = memory
        self.meta = meta
        self.scored: ScoredRecall = ScoredRecall(memory, meta)

    def hits(self, query: str | np.ndarray, k: int, *, threshold: float, touch: bool) -> list[Hit]:
        return self.scored.hits(query, k, threshold=threshold, touch=touch)


def recall(
    ranking: Ranking,
    query: str | np.ndarray,
    k: int = 5,
    *,
    threshold: float = 0.0,
    touch: bool = False,
    spread: int = 0,
) -> list[Hit]:
    """The ``k`` traces ``ranking`` puts first for ``query``, best first.

    Parameters
    ----------
    ranking : Ranking
    query : str or ndarray
        A text, or a code (``cosine`` only).
    k : int
        At least 1.
    threshold : float
        Hits scoring below it are dropped.
    touch : bool
        Bump the returned traces' use counts (a writable store).
    spread : int
        Link hops to spread along from the hits (0: none); needs a ranking with a
        ``memory`` (the four shipped ones).

    Raises
    ------
    ArgumentError
        An empty or blank text, k < 1, a bad ``spread``.
    """
    if isinstance(query, str) and not query.strip():
        raise ArgumentError("the query is empty")
    hits = ranking.hits(query, k, threshold=threshold, touch=touch)
    if not spread:
        return hits
    from sentient_core.memory.spreading import spread_hits

    memory = getattr(ranking, "memory", None)
    if memory is None:
        raise ArgumentError(f"spread needs a ranking over a memory; {ranking.name!r} has none")
    return spread_hits(memory, hits, k, spread)
