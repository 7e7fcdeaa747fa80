"""Scored top-k: the learned scorer's overlay computed inside the streaming cosine scan.

score_i = w_cos · cos(row_i, query) + static_i + w_rec · exp(−max(0, now − last_access_i) / τ)

``static_i`` holds every factor that does not depend on the query or the clock
(strength, importance, access, efficacy, source weight, surprise, open debt, the
bias), already weighted; recency is computed from ``last_access`` with
τ = ``recency_s``. Vetoed rows (``valid == 0``) are never read. Rows are unit
vectors (the memory's codes), so the cosine is ``dot / |query|``.

One parallel pass over the rows, as :func:`sentient_kernels.holographic.topk_cosine`: per
block a small heap of the best rows; a float32 estimate of the dot screens out a
row when even its upper bound — estimate plus its rounding-error margin, times
``w_cos``, plus ``static_i``, plus ``max(0, w_rec)`` (recency is at most 1) — cannot
beat the block's current k-th score, so ``exp`` runs only for the rows that may
enter. Every score that can reach the result is computed in float64; ties go to
the lower row; the result does not depend on the thread count or the blocking.
The scan itself is compiled without fastmath, so that its non-finite check holds
(the float32 dot it calls keeps the project's fastmath).
The reference is ``tests/naive_overlay.py``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from sentient_kernels.checks import check_array, check_int
from sentient_kernels.config import jit
from sentient_kernels.holographic import (
    _dot_f32,
    _dot_f64,
    _heap_push,
    _heap_replace_root,
    _merge_topk,
)

__all__ = ["topk_scored"]

_BLOCKS_PER_THREAD = 8
_MIN_BLOCK_ROWS = 2048


@jit(fastmath=False)
def _scored_block(
    codes,
    query,
    q64,
    inv_qnorm,
    margin,
    valid,
    static,
    last_access,
    w_cos,
    w_rec,
    now,
    recency_s,
    start,
    stop,
    b,
    heap_s,
    heap_i,
):
    """One block of :func:`_scan_scored`: its heap and fill count, and its first
    non-finite row (-1: none)."""
    kb = heap_s.shape[2]
    rec_bound = max(0.0, w_rec)
    n = 0
    first_bad = -1
    for i in range(start, stop):
        if valid[i] == 0:
            continue
        base = static[i]
        if n == kb:
            est = np.float64(_dot_f32(codes[i], query)) * inv_qnorm
            if w_cos * est + base + rec_bound + margin < heap_s[0, b, 0]:
                continue
        age = now - last_access[i]
        if age < 0.0:
            age = 0.0
        s = w_cos * (_dot_f64(codes[i], q64) * inv_qnorm) + base
        s += w_rec * math.exp(-age / recency_s)
        if not math.isfinite(s):
            first_bad = i
            break
        if n < kb:
            _heap_push(heap_s[0, b], heap_i[0, b], n, s, i)
            n += 1
        elif s > heap_s[0, b, 0]:
            _heap_replace_root(heap_s[0, b], heap_i[0, b], kb, s, i)
    return n, first_bad


@jit(fastmath=False)
def _query_terms(query, w_cos):
    """The query in float64, 1/|query|, and the screening margin of the float32 estimate."""
    d = query.shape[0]
    unit = 2.0**-24
    gamma = d * unit / (1.0 - d * unit)
    q64 = np.empty(d)
    qq = 0.0
    for j in range(d):
        q64[j] = query[j]
        qq += q64[j] * q64[j]
    # |dot32 − dot| ≤ γ_D |row| |q| with |row| = 1: the cosine error is ≤ γ_D, scaled by |w_cos|.
    return q64, 1.0 / math.sqrt(qq), 2.5 * gamma * abs(w_cos)


@jit(parallel=True, fastmath=False)
def _scan_scored(
    codes,
    query,
    valid,
    static,
    last_access,
    w_cos,
    w_rec,
    now,
    recency_s,
    block_rows,
    heap_s,
    heap_i,
    heap_n,
    bad,
):
    m = codes.shape[0]
    q64, inv_qnorm, margin = _query_terms(query, w_cos)
    for b in prange(heap_n.shape[0]):
        heap_n[b], bad[b] = _scored_block(
            codes,
            query,
            q64,
            inv_qnorm,
            margin,
            valid,
            static,
            last_access,
            w_cos,
            w_rec,
            now,
            recency_s,
            b * block_rows,
            min(m, (b + 1) * block_rows),
            b,
            heap_s,
            heap_i,
        )


def _checked(
    codes: object,
    query: object,
    k: object,
    valid: object,
    static: object,
    last_access: object,
    scalars: tuple[float, float, float, float],
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray, np.ndarray]:
    """The arguments of a scored top-k checked (:func:`topk_scored` and
    :func:`sentient_kernels.overlay_q8.topk_scored_quantised` share them); ``scalars``
    are ``(w_cos, w_rec, now, recency_s)``."""
    # finite=False: an isfinite pass would read as much as the scan; the scan detects
    # a non-finite row instead (its estimate is NaN, so it is never screened out).
    codes = check_array("codes", codes, dtype=np.float32, ndim=2, finite=False)
    m, d = codes.shape
    query = check_array("query", query, dtype=np.float32, shape=(d,))
    if not query.any():
        raise ValueError("query must not be all zeros (its cosine is undefined)")
    k = check_int("k", k, lo=1)
    if isinstance(valid, np.ndarray) and valid.dtype == np.bool_:
        valid = valid.view(np.uint8)
    valid = check_array("valid", valid, dtype=np.uint8, shape=(m,))
    static = check_array("static", static, dtype=np.float64, shape=(m,))
    last_access = check_array("last_access", last_access, dtype=np.float64, shape=(m,))
    for name, x in zip(("w_cos", "w_rec", "now", "recency_s"), scalars, strict=True):
        if not math.isfinite(float(x)):
            raise ValueError(f"{name} must be finite, got {x!r}")
    if scalars[3] <= 0:
        raise ValueError(f"recency_s must be > 0, got {scalars[3]}")
    return codes, query, k, valid, static, last_access


def topk_scored(
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
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k rows by the scored overlay (see the module docstring).

    Parameters
    ----------
    codes : (M, D) float32, C-contiguous, unit rows (trusted, as ``normalized=True``);
        a non-finite row raises ValueError (detected during the scan)
    query : (D,) float32, finite, not all zero
    k : int >= 1
    valid : (M,) bool or uint8
        0: not a candidate (retired, vetoed).
    static : (M,) float64
        The weighted query- and clock-independent part of each row's score.
    last_access : (M,) float64
        Unix seconds.
    w_cos, w_rec : float
        Weights of the cosine and of the recency.
    now : float
    recency_s : float
        Recency time constant τ in seconds (24 h).

    Returns
    -------
    rows : (k',) int64
        Best first, ties to the lower row; ``k' = min(k, valid rows)``.
    scores : (k',) float64
    """
    codes, query, k, valid, static, last_access = _checked(
        codes, query, k, valid, static, last_access, (w_cos, w_rec, now, recency_s)
    )
    m = codes.shape[0]
    kk = min(k, int(np.count_nonzero(valid)))
    out_i = np.empty((1, kk), dtype=np.int64)
    out_s = np.empty((1, kk), dtype=np.float64)
    if kk == 0:
        return out_i[0], out_s[0]
    block_rows = max(_MIN_BLOCK_ROWS, -(-m // (_BLOCKS_PER_THREAD * numba.get_num_threads())))
    nblocks = -(-m // block_rows)
    kb = min(kk, block_rows)
    heap_s = np.empty((1, nblocks, kb), dtype=np.float64)
    heap_i = np.empty((1, nblocks, kb), dtype=np.int64)
    heap_n = np.empty(nblocks, dtype=np.int64)
    bad = np.empty(nblocks, dtype=np.int64)
    w_cos, w_rec, now, recency_s = float(w_cos), float(w_rec), float(now), float(recency_s)
    if nblocks > 1:
        _scan_scored(
            codes,
            query,
            valid,
            static,
            last_access,
            w_cos,
            w_rec,
            now,
            recency_s,
            block_rows,
            heap_s,
            heap_i,
            heap_n,
            bad,
        )
    else:  # one block: no parallel region to wake, the same scan
        q64, inv_qnorm, margin = _query_terms(query, w_cos)
        heap_n[0], bad[0] = _scored_block(
            codes,
            query,
            q64,
            inv_qnorm,
            margin,
            valid,
            static,
            last_access,
            w_cos,
            w_rec,
            now,
            recency_s,
            0,
            m,
            0,
            heap_s,
            heap_i,
        )
    bad_rows = bad[bad >= 0]
    if bad_rows.size:
        raise ValueError(f"codes contains non-finite value(s) (NaN or inf) in row {bad_rows[0]}")
    _merge_topk(heap_s, heap_i, heap_n, kk, out_i, out_s)
    return out_i[0], out_s[0]


def _warmup() -> None:
    # One block (the serial scan) and several (the parallel one).
    for m in (3, 2 * _MIN_BLOCK_ROWS + 1):
        codes = np.ones((m, 4), dtype=np.float32) / 2
        topk_scored(
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
