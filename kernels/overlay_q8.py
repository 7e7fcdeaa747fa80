"""The scored top-k of :mod:`sentient_kernels.overlay` from int8 codes, with the same answer.

:func:`topk_scored_quantised` returns :func:`sentient_kernels.overlay.topk_scored`'s
rows and scores, bit for bit, reading the float32 rows of a few candidates only
(the scan reads the int8 copy: a quarter of the bytes). It is the scored recall's
full scan when a memory keeps compact codes (a code query, and the rows without
a query term that a scored hybrid must still consider).

The cosine of each row is bounded from its int8 row exactly as in
:mod:`sentient_kernels.quantized` (``a − r ≤ cos ≤ a + r``, unit rows). The score
``w_cos · cos + static + w_rec · recency`` then lies within ``[lo, up]``, with the
recency computed only for the rows whose bound with the largest recency (1) may
still reach the block's k-th lower bound, and a slack of 1e-12 relative to the
terms' magnitudes plus 1e-12 absolute for the float64 sum's rounding (the
cosine's own slack is the quantised bound's). ``T``, the k-th largest ``lo``, is
met by at least k rows; a row with ``up < T`` cannot be in the top k, not even by a
tie. The candidates (``up ≥ T``) are re-scored in ascending row order by
:func:`~sentient_kernels.overlay.topk_scored` itself, so scores are its own and
ties go to the lower row as there. The reference is ``topk_scored`` on the float32
rows (tests/test_overlay_q8.py).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from sentient_kernels import overlay
from sentient_kernels.config import jit
from sentient_kernels.dot_i8 import dot_row, prefetch_row, split_query
from sentient_kernels.quantized import (
    Gather,
    QuantisedCodes,
    _bounds_dot,
    _candidates_at,
    _check_quantised,
    _push_min,
    _quantise_query,
    _query_pmax,
    _replace_min,
    _threshold,
    gathered,
)

__all__ = ["topk_scored_quantised"]

_BLOCKS_PER_THREAD = 8
_MIN_BLOCK_ROWS = 4096
_CHUNK = 1024  # rows whose dots and bounds are computed together (as quantized._CHUNK)
_AHEAD = 8  # rows between a row's prefetch and its dot (as quantized._AHEAD)
_SUM_SLACK = 1e-12


@jit(fastmath=False, inline=True)
def _score_bounds(cl, cu, w_cos, base, rec):
    """Lower and upper bounds of ``w_cos · cos + base + rec`` for ``cos`` in ``[cl, cu]``."""
    a = w_cos * cl
    b = w_cos * cu
    lo_c = a if a < b else b
    hi_c = b if a < b else a
    slack = _SUM_SLACK * (abs(lo_c) + abs(hi_c) + abs(base) + abs(rec)) + _SUM_SLACK
    return lo_c + base + rec - slack, hi_c + base + rec + slack


@jit(parallel=True, fastmath=False)
def _scan(
    q_codes,
    scales,
    bounds,
    norms,
    qparts,
    valid,
    static,
    last_access,
    weights,
    block_rows,
    heap,
    heap_n,
    cand_row,
    cand_up,
    cand_n,
):
    """Per block: the kb best lower bounds of the score, and the rows that may reach them.

    ``qparts`` = (p, h, lo, corr, t, pnorm, enorm) of the quantised query;
    ``weights`` = (w_cos, w_rec, now, recency_s). Block ``b`` writes its heap to
    ``heap[b]`` and its candidates (ascending) from ``cand_row[b * block_rows]`` on.
    """
    p, h, lo, corr, t, pnorm, enorm = qparts
    w_cos, w_rec, now, recency_s = weights
    rec_max = w_rec if w_rec > 0.0 else 0.0
    m = q_codes.shape[0]
    kb = heap.shape[1]
    for b in prange(heap_n.shape[0]):
        start = b * block_rows
        stop = min(m, start + block_rows)
        dots = np.zeros(_CHUNK, dtype=np.int32)
        lows = np.empty(_CHUNK)
        ups = np.empty(_CHUNK)
        n = 0
        nc = 0
        for c0 in range(start, stop, _CHUNK):
            c1 = min(stop, c0 + _CHUNK)
            for i in range(c0, c1):
                if i + _AHEAD < stop:
                    prefetch_row(q_codes, i + _AHEAD)
                if valid[i] != 0:
                    dots[i - c0] = dot_row(q_codes, i, p, h, lo, corr)
            _bounds_dot(dots, scales, bounds, norms, c0, c1, t, pnorm, enorm, ups, lows)
            for i in range(c0, c1):
                if valid[i] == 0:
                    continue
                base = static[i]
                if n == kb:
                    # With the largest recency the row can have: below the root, out.
                    _, up_max = _score_bounds(lows[i - c0], ups[i - c0], w_cos, base, rec_max)
                    if up_max < heap[b, 0]:
                        continue
                age = now - last_access[i]
                if age < 0.0:
                    age = 0.0
                rec = w_rec * math.exp(-age / recency_s)
                low, up = _score_bounds(lows[i - c0], ups[i - c0], w_cos, base, rec)
                if not (math.isfinite(low) and math.isfinite(up)):
                    # Re-scored whatever: the float32 kernel reports what is not finite.
                    low = -np.inf
                    up = np.inf
                if n < kb:
                    _push_min(heap[b], n, low)
                    n += 1
                elif low > heap[b, 0]:
                    _replace_min(heap[b], kb, low)
                # The root only rises: a row below it now stays below the threshold.
                if n < kb or up >= heap[b, 0]:
                    cand_row[start + nc] = i
                    cand_up[start + nc] = up
                    nc += 1
        cand_n[b] = nc
        heap_n[b] = n


def topk_scored_quantised(
    quantised: QuantisedCodes,
    codes: np.ndarray,
    query: np.ndarray,
    k: int,
    *,
    valid: np.ndarray,
    static: np.ndarray,
    last_access: np.ndarray,
    w_cos: float,
    w_rec: float,
    now: float,
    recency_s: float = 86400.0,
    gather: Gather | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`sentient_kernels.overlay.topk_scored` from int8 codes (same rows and scores).

    Parameters
    ----------
    quantised : QuantisedCodes
        ``quantise(codes)`` (trusted: checking it would read what this avoids).
    codes : (M, D) float32, C-contiguous, unit rows
        Only the candidates' rows are read (an ``np.memmap`` stays mostly unread).
    query, k, valid, static, last_access, w_cos, w_rec, now, recency_s
        As in :func:`~sentient_kernels.overlay.topk_scored`.
    gather : callable, optional
        Reads the candidates' float32 rows in place of ``codes[rows]``
        (:data:`sentient_kernels.quantized.Gather`).

    Returns
    -------
    rows : (k',) int64
        Best first, ties to the lower row; ``k' = min(k, valid rows)``.
    scores : (k',) float64
        Bit-identical to ``topk_scored``'s.
    """
    codes, query, k, valid, static, last_access = overlay._checked(
        codes, query, k, valid, static, last_access, (w_cos, w_rec, now, recency_s)
    )
    q = _check_quantised(quantised, codes)
    m, d = codes.shape
    kk = min(k, int(np.count_nonzero(valid)))
    if kk == 0:
        return np.empty(0, dtype=np.int64), np.empty(0)
    pmax = _query_pmax(d)
    if pmax < 1:
        raise ValueError(f"codes have too many columns ({d}) for int32 accumulation")
    p = np.empty(d, dtype=np.int16)
    t, pnorm, enorm = _quantise_query(query, pmax, p)
    h = np.empty(d, dtype=np.int8)
    lo = np.empty(d, dtype=np.int8)
    corr = split_query(p, h, lo)
    block_rows = max(_MIN_BLOCK_ROWS, -(-m // (_BLOCKS_PER_THREAD * numba.get_num_threads())))
    nblocks = -(-m // block_rows)
    kb = min(kk, block_rows)
    heap = np.empty((nblocks, kb), dtype=np.float64)
    heap_n = np.empty(nblocks, dtype=np.int64)
    # One slot a row, but a block writes only its few candidates: the rest stays untouched.
    cand_row = np.empty(m, dtype=np.int64)
    cand_up = np.empty(m, dtype=np.float64)
    cand_n = np.empty(nblocks, dtype=np.int64)
    weights = (float(w_cos), float(w_rec), float(now), float(recency_s))
    _scan(
        q.codes, q.scales, q.bounds, q.norms, (p, h, lo, corr, t, pnorm, enorm), valid, static,
        last_access, weights, block_rows, heap, heap_n, cand_row, cand_up, cand_n,
    )  # fmt: skip
    thr = _threshold(heap, heap_n, kk)
    rows = _candidates_at(block_rows, cand_row, cand_up, cand_n, thr)
    if rows.shape[0] < kk:
        raise ValueError(
            f"quantised does not describe codes: fewer than k={kk} rows can reach the top k"
            " (NaN or stale bounds? use quantise(codes))"
        )
    # The float32 kernel on the candidates, in row order: its scores, its tie rule.
    sub = np.ascontiguousarray(codes[rows]) if gather is None else gathered(gather, rows, d)
    local, scores = overlay.topk_scored(
        sub,
        query,
        kk,
        valid=np.ones(rows.shape[0], dtype=np.uint8),
        static=np.ascontiguousarray(static[rows]),
        last_access=np.ascontiguousarray(last_access[rows]),
        w_cos=weights[0],
        w_rec=weights[1],
        now=weights[2],
        recency_s=weights[3],
    )
    return rows[local], scores


def _warmup() -> None:
    from sentient_kernels.quantized import quantise

    for m in (3, 2 * _MIN_BLOCK_ROWS + 1):
        codes = np.ones((m, 4), dtype=np.float32) / 2
        topk_scored_quantised(
            quantise(codes),
            codes,
            np.ones(4, dtype=np.float32),
            2,
            valid=np.ones(m, dtype=np.uint8),
            static=np.zeros(m),
            last_access=np.zeros(m),
            w_cos=1.0,
            w_rec=0.2,
            now=1.0,
        )
