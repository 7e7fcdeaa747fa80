"""Exact top-k cosine of one query over a small code matrix, in one serial dispatch.

:func:`sentient_kernels.holographic.topk_cosine` sends a matrix of at most one
scan block here (a small memory: no thread pool to wake, no per-block heaps to
merge), and :data:`sentient_kernels.unchecked.holographic_topk_cosine` is this
kernel for callers that validated their arrays once (memory's recall).

The answer is :func:`~sentient_kernels.holographic.topk_cosine`'s, bit for bit:
the same screen (a float32 estimate plus its worst-case rounding error against
the heap's k-th score), the same float64 scores
(:func:`~sentient_kernels.topk_parts._exact_cosine`) and the same tie rule
(rows arrive in increasing order; an equal score loses to the one in the heap).
Only the estimate is computed differently: four rows at a time
(:func:`_estimate4`), so the query is loaded once per four rows and the four
dots and four squared norms run as eight independent vector accumulations. The
screen's error bound holds for any summation order, so which rows are
re-scored exactly can change, never the answer.
"""

from __future__ import annotations

import math

import numpy as np

from sentient_kernels.config import jit
from sentient_kernels.topk_parts import (
    _dot_f64,
    _exact_cosine,
    _heap_push,
    _heap_replace_root,
    _sumsq_f64,
)

__all__: list[str] = []


@jit()
def _estimate4(codes, rows, q):
    """Float32 dots with ``q`` and squared norms of the four rows ``rows`` (one pass)."""
    x0 = codes[rows[0]]
    x1 = codes[rows[1]]
    x2 = codes[rows[2]]
    x3 = codes[rows[3]]
    a0 = a1 = a2 = a3 = np.float32(0.0)
    n0 = n1 = n2 = n3 = np.float32(0.0)
    for j in range(q.shape[0]):
        qj = q[j]
        v0 = x0[j]
        v1 = x1[j]
        v2 = x2[j]
        v3 = x3[j]
        a0 += v0 * qj
        a1 += v1 * qj
        a2 += v2 * qj
        a3 += v3 * qj
        n0 += v0 * v0
        n1 += v1 * v1
        n2 += v2 * v2
        n3 += v3 * v3
    return a0, a1, a2, a3, n0, n1, n2, n3


@jit()
def _sort_heap(hs, hi, n):
    """Sort a full min-heap in place into (score desc, row asc): heapsort, no allocation."""
    for t in range(n - 1, 0, -1):
        s_root = hs[0]
        i_root = hi[0]
        # The root (worst) goes to the end; the last entry sifts down a heap of size t.
        _heap_replace_root(hs, hi, t, hs[t], hi[t])
        hs[t] = s_root
        hi[t] = i_root


@jit()
def _topk_into(codes, query, k, normalized, has_mask, valid, out_ids, out_scores):
    """Serial top-k of one query into caller-owned outputs (``unchecked.holographic_topk_cosine``).

    Returns the count ``min(k, counted rows)``, or -1 (a shape, nothing
    written), -2 (``query`` zero or non-finite) or -3 (a counted row holds
    NaN/inf; nothing written).
    """
    m, d = codes.shape
    if query.shape[0] != d or (has_mask and valid.shape[0] < m):
        return -1
    kb = min(k, m)
    if kb <= 0:
        return 0
    # Float32 and float64 copies: the copy accepts any layout of ``query``.
    q = np.empty(d, dtype=np.float32)
    q64 = np.empty(d)
    for j in range(d):
        q[j] = query[j]
        q64[j] = query[j]
    # Squares of float32 values neither overflow nor underflow to 0 in float64.
    qq = _sumsq_f64(q)
    if not (qq > 0.0 and math.isfinite(qq)):
        return -2
    # |dot32 - dot| <= gamma_D |x| |q| for any summation order, gamma_D = D u / (1 - D u),
    # u = 2^-24 (holographic._prepare_queries); no screen where that could fail.
    unit = 2.0**-24
    can_screen = d * unit < 0.01
    gamma = d * unit / (1.0 - d * unit) if can_screen else 1.0
    inv_qnorm = 1.0 / math.sqrt(qq)
    q_screen = can_screen and 1e-30 < qq < 1e30
    hs = np.empty(kb)
    hi = np.empty(kb, dtype=np.int64)
    rows = np.empty(4, dtype=np.int64)
    est = np.empty(4, dtype=np.float32)
    nns = np.empty(4, dtype=np.float32)
    n = 0
    i = 0
    while i < m:
        got = 0
        while got < 4 and i < m:
            if not has_mask or valid[i] != 0:
                rows[got] = i
                got += 1
            i += 1
        if got == 0:
            break
        for t in range(got, 4):  # a short last group repeats a row (its result unused)
            rows[t] = rows[0]
        est[0], est[1], est[2], est[3], nns[0], nns[1], nns[2], nns[3] = _estimate4(codes, rows, q)
        for t in range(got):
            r = rows[t]
            nn32 = nns[t]
            # NaN/inf anywhere in the row makes nn32 non-finite, failing this test.
            in_range = 1e-30 < nn32 < 1e30
            nn64 = -1.0
            if not in_range:
                nn64 = _sumsq_f64(codes[r])
                if not math.isfinite(nn64):
                    return -3
            elif n == kb and q_screen:
                if normalized:
                    # sqrt(nn) <= (1 + nn) / 2: the margin without a square root per row
                    # (equal to within ~1e-12 for the unit rows this mode is for).
                    bound = est[t] * inv_qnorm + 1.25 * gamma * (1.0 + np.float64(nn32))
                else:
                    bound = est[t] / math.sqrt(np.float64(nn32)) * inv_qnorm + 2.5 * gamma
                if bound < hs[0]:
                    continue
            if not normalized and nn64 < 0.0:
                nn64 = _sumsq_f64(codes[r])
            s = _exact_cosine(_dot_f64(codes[r], q64), nn64, normalized, inv_qnorm)
            if n < kb:
                _heap_push(hs, hi, n, s, r)
                n += 1
            elif s > hs[0]:
                # Rows arrive in increasing order, so an equal score always loses
                # to the root: ">" is the full tie rule here.
                _heap_replace_root(hs, hi, kb, s, r)
    if out_ids.shape[0] < n or out_scores.shape[0] < n:
        return -1
    _sort_heap(hs, hi, n)
    for t in range(n):
        out_ids[t] = hi[t]
        out_scores[t] = hs[t]
    return n


def _warmup() -> None:
    codes = np.ones((5, 4), dtype=np.float32)
    query = np.ones(4, dtype=np.float32)
    mask = np.ones(5, dtype=np.uint8)
    for normalized in (False, True):
        _topk_into(codes, query, 2, normalized, True, mask, np.empty(2, np.int64), np.empty(2))
