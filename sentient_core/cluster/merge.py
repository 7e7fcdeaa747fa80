"""Exact merges of per-shard results: top-k by (score desc, global id asc), corpus statistics.

The per-shard top-k are exact, so the global top-k lies in their union; one
stable lexicographic sort of that union by (−score, global id) gives the same
ids, scores and order as a single memory holding every shard's traces in
global-id order (its ties go to the lower row, which is the lower global id).
``numpy.argpartition`` is never used: it breaks ties arbitrarily.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sentient_core.cluster.wire import CorpusStats, LexStats, ShardHits

__all__ = ["corpus_stats", "merge_by_primes", "merge_topk", "query_df"]


def merge_topk(parts: Sequence[ShardHits], k: int) -> ShardHits:
    """The best ``k`` of the union of ``parts`` by (score desc, global id asc)."""
    parts = [p for p in parts if p.ids.size]
    if not parts:
        return ShardHits(ids=np.zeros(0, np.int64), scores=np.zeros(0))
    ids = np.concatenate([p.ids for p in parts])
    scores = np.concatenate([p.scores for p in parts])
    order = np.lexsort((ids, -scores))[:k]
    lexical = cosine = None
    if all(p.lexical is not None for p in parts):
        lexical = np.concatenate([p.lexical for p in parts])[order]
    if all(p.cosine is not None for p in parts):
        cosine = np.concatenate([p.cosine for p in parts])[order]
    codes = None
    if all(p.codes is not None for p in parts):
        codes = np.concatenate([p.codes for p in parts])[order]
    return ShardHits(
        ids=ids[order], scores=scores[order], lexical=lexical, cosine=cosine, codes=codes
    )


def merge_by_primes(parts: Sequence[ShardHits], k: int) -> ShardHits:
    """The best ``k`` of recall-by-primes answers: shared primes desc, then ``created``
    desc, then the higher global id (a single memory's order: its higher row)."""
    parts = [p for p in parts if p.ids.size]
    if not parts:
        return ShardHits(ids=np.zeros(0, np.int64), scores=np.zeros(0))
    ids = np.concatenate([p.ids for p in parts])
    scores = np.concatenate([p.scores for p in parts])
    created = np.concatenate([p.created for p in parts if p.created is not None])
    order = np.lexsort((-ids, -created, -scores))[:k]
    return ShardHits(ids=ids[order], scores=scores[order], created=created[order])


def corpus_stats(stats: Mapping[int, LexStats]) -> CorpusStats:
    """N and avgdl of the whole corpus from every shard's phase-1 answer.

    The same integer sums a single memory keeps (active traces, their total
    length), divided once: the same float ``avgdl``, bit for bit.
    """
    active = sum(int(s.active) for s in stats.values())
    total = sum(int(s.lex_total) for s in stats.values())
    return CorpusStats(n_docs=float(active), avgdl=total / active if active > 0 else 0.0)


def query_df(stats: Mapping[int, LexStats], union: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """Document frequency over every shard of each of ``terms`` (a subset of ``union``,
    the sorted terms phase 1 asked about)."""
    total = np.zeros(union.size, dtype=np.int64)
    for s in stats.values():
        total += s.df
    return total[np.searchsorted(union, terms)]
