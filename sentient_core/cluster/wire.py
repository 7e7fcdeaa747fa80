"""What a shard server takes and returns: plain arrays and msgspec structs.

Everything here pickles (numpy arrays, msgspec structs of them), so the same
calls serve an in-process shard (:class:`~sentient_core.cluster.local.LocalShards`)
and a remote one (a Ray actor). Calls are batch-shaped: one call carries every
query of a batch, so a remote backend pays one round trip per shard per phase.
"""

from __future__ import annotations

import msgspec
import numpy as np

__all__ = ["CorpusStats", "LexQuery", "LexStats", "ShardHits", "ShardInfo"]


class ShardInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A shard's state (:meth:`ShardServer.info`).

    Attributes
    ----------
    shard : int
    path : str
        Its LMDB data directory.
    n : int
        Rows of its read view (traces, retired ones included).
    active : int
        Active traces.
    lex_total : int
        Total length in tokens of the active traces.
    code_dim : int
    generation : int
        Its retirement generation.
    readonly : bool
    incarnation : int
        Random per server object: a restarted server (a Ray actor rebuilt from the same
        directory) reports another, so callers rebuild what they sent the old one.
    """

    shard: int
    path: str
    n: int
    active: int
    lex_total: int
    code_dim: int
    generation: int
    readonly: bool
    incarnation: int = 0


class LexStats(msgspec.Struct, frozen=True, kw_only=True):
    """Phase 1 of a BM25/hybrid recall: one shard's part of the corpus statistics.

    Attributes
    ----------
    n : int
        The rows of the view counted (phase 2 searches no row above it).
    active, lex_total : int
        Active traces and their total length (their sums give N and avgdl).
    df : ndarray (T,) int64
        Active rows below ``n`` holding each asked term.
    generation : int
        The retirement generation counted (phase 2 refuses to score at another).
    """

    n: int
    active: int
    lex_total: int
    df: np.ndarray
    generation: int = 0


class CorpusStats(msgspec.Struct, frozen=True, kw_only=True):
    """The whole corpus's statistics every shard scores with (phase 2).

    Attributes
    ----------
    n_docs : float
        N: active traces over every shard.
    avgdl : float
        Their mean length (total length / N, 0 when N is 0).
    """

    n_docs: float
    avgdl: float


class LexQuery(msgspec.Struct, frozen=True, kw_only=True):
    """One BM25/hybrid query as a shard scores it.

    Attributes
    ----------
    terms : ndarray (Q,) uint64
        Distinct term hashes, ascending.
    weights : ndarray (Q,) float64
        Their counts in the query.
    df : ndarray (Q,) int64
        Their document frequencies over every shard.
    code : ndarray (code_dim,) float32 or None
        The query's code (hybrid only).
    """

    terms: np.ndarray
    weights: np.ndarray
    df: np.ndarray
    code: np.ndarray | None = None


class ShardHits(msgspec.Struct, frozen=True, kw_only=True):
    """One query's exact top-k in one shard, best first (ties to the lower local id).

    Attributes
    ----------
    ids : ndarray int64
        Global ids.
    scores : ndarray float64
    lexical, cosine : ndarray float64 or None
        The score components (see :class:`~sentient_core.memory.types.Hit`).
    created : ndarray float64 or None
        The traces' creation times (recall by primes orders ties by them).
    codes : ndarray (hits, code_dim) float32 or None
        The hits' code rows (the scored recall computes their cosines in one product
        over the merged hits, as one memory does over its own).
    """

    ids: np.ndarray
    scores: np.ndarray
    lexical: np.ndarray | None = None
    cosine: np.ndarray | None = None
    created: np.ndarray | None = None
    codes: np.ndarray | None = None
