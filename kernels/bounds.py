"""Bounds of BM25's tf factors per posting block: what lets MaxScore skip postings.

BM25 (:mod:`sentient_kernels.bm25`) gives a posting of term ``t`` in row ``d``
the contribution ``w_t · idf(t) · f``, with the tf factor::

    f = tf / (tf + k1 · (1 − b + b · dl / avgdl))

``f`` depends on the query only through ``avgdl``, the mean length of the
valid rows when the query runs. :func:`term_bounds` computes, once per
segment, the largest ``f`` of every block of :data:`~sentient_kernels.segments.BLOCK`
postings and of every term's whole list at a reference ``avgdl_ref``
(:class:`~sentient_kernels.segments.Bounds`). At a query's ``avgdl`` each
factor is at most the stored one times ``max(1, avgdl / avgdl_ref)``: with
``c = k1·b/avgdl`` the denominator ``tf + k1(1 − b) + c·dl`` shrinks at most
by ``avgdl_ref/avgdl`` when ``avgdl`` grows, and grows when it shrinks.
:func:`factor_scale` gives that multiplier for a query (or says the stored
factors do not apply: other ``k1``/``b``, where every factor is at most 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sentient_kernels.checks import check_array, check_scalar
from sentient_kernels.config import jit
from sentient_kernels.lexical import TermCounts
from sentient_kernels.segments import (
    BLOCK,
    Bounds,
    Packed,
    Segment,
    _block_layout,
    _check_segment,
    build_segment,
    pack,
)

__all__ = ["factor_scale", "pack_with_bounds", "term_bounds"]

# The factor as the scoring kernels compute it: no fast-math.
_jit = jit(fastmath=False)


@_jit
def _tf_factor(tf, dl, avgdl, k1, b):
    """``tf / (tf + k1·(1 − b + b·dl/avgdl))`` exactly as the BM25 kernels compute it."""
    ratio = np.float64(dl) / avgdl if avgdl > 0.0 else 1.0
    return tf / (tf + k1 * (1.0 - b + b * ratio))


@_jit
def _term_bounds(starts, rows, tfs, doc_len, avgdl_ref, k1, b):
    """Largest factor per block and per term; rows beyond ``doc_len`` count as length 0."""
    n_terms = starts.size - 1
    nd = doc_len.size
    blocks = _block_layout(starts)
    block_f = np.zeros(blocks[n_terms])
    term_f = np.zeros(n_terms)
    for t in range(n_terms):
        a = starts[t]
        z = starts[t + 1]
        best = 0.0
        for blk in range(blocks[t], blocks[t + 1]):
            end = min(a + BLOCK, z)
            mx = 0.0
            for p in range(a, end):
                r = rows[p]
                dl = doc_len[r] if r < nd else np.int32(0)
                f = _tf_factor(np.float64(tfs[p]), dl, avgdl_ref, k1, b)
                if f > mx:
                    mx = f
            block_f[blk] = mx
            if mx > best:
                best = mx
            a = end
        term_f[t] = best
    return blocks, block_f, term_f


@_jit
def factor_scale(params, avgdl, k1, b):
    """Multiplier of the stored factors at this query, or -1.0 if they do not apply (use 1).

    ``params`` is a :class:`~sentient_kernels.segments.Bounds`' ``(avgdl_ref, k1, b)``.
    """
    if params[1] != k1 or params[2] != b:
        return -1.0
    if params[0] == np.inf:
        return 1.0  # lengths were taken as 0: a bound at any avgdl
    if avgdl <= 0.0:
        return -1.0  # the kernels then use a ratio of 1 for every row
    return max(1.0, avgdl / params[0])


def term_bounds(
    seg: Segment,
    doc_len: np.ndarray | None,
    k1: float,
    b: float,
    avgdl_ref: float | None = None,
) -> Bounds:
    """The :class:`~sentient_kernels.segments.Bounds` of a segment (one pass over its postings).

    Parameters
    ----------
    seg : Segment
        Valid by construction (not checked).
    doc_len : (n,) int32 or None
        Length of each row (rows beyond it count as 0). None: every length
        is taken as 0, which bounds the factor at any ``avgdl`` (looser).
    k1, b : float
        BM25's parameters (the bounds apply to queries with the same ones).
    avgdl_ref : float, optional
        The mean length to compute the factors at; the closer to the queries'
        ``avgdl`` the tighter. Default: the mean of ``doc_len``.
    """
    k1 = check_scalar("k1", k1, lo=0.0)
    b = check_scalar("b", b, lo=0.0, hi=1.0)
    if doc_len is None:
        lengths, ref = np.zeros(0, dtype=np.int32), np.inf
    else:
        lengths = check_array("doc_len", doc_len, dtype=np.int32, ndim=1)
        ref = float(lengths.mean()) if avgdl_ref is None and lengths.size else avgdl_ref or 0.0
        if not ref > 0.0:
            lengths, ref = np.zeros(0, dtype=np.int32), np.inf
    blocks, block_f, term_f = _term_bounds(seg.starts, seg.rows, seg.tfs, lengths, ref, k1, b)
    return Bounds(blocks, block_f, term_f, np.array([ref, k1, b]))


def pack_with_bounds(
    segments: Sequence[Segment], doc_len: np.ndarray | None, k1: float, b: float
) -> Packed:
    """:func:`~sentient_kernels.segments.pack` (checked) with each segment's :func:`term_bounds`."""
    checked = [_check_segment(f"segments[{i}]", seg) for i, seg in enumerate(segments)]
    bounds = [term_bounds(seg, doc_len, k1, b) for seg in checked]
    return pack(checked, check=False, bounds=bounds)


def _warmup() -> None:
    counts = TermCounts(
        np.array([0, 2, 3], dtype=np.int64),
        np.array([3, 9, 9], dtype=np.uint64),
        np.array([1, 2, 1], dtype=np.uint16),
        np.array([3, 1], dtype=np.int64),
    )
    seg = build_segment(counts, np.array([0, 1], dtype=np.int64))
    doc_len = np.array([3, 1], dtype=np.int32)
    bounds = term_bounds(seg, doc_len, 1.2, 0.75)
    term_bounds(seg, None, 1.2, 0.75)
    pack_with_bounds([seg], doc_len, 1.2, 0.75)
    factor_scale(bounds.params, 2.0, 1.2, 0.75)
