"""Compact int8 codes with exact top-k cosine answers.

:func:`quantise` turns float32 code rows into int8 rows with a per-row scale
(``x ≈ scale · c``, ``c`` in [-127, 127]), and keeps for every row an upper
bound on the quantisation error ``‖x − scale · c‖`` and the row's norm. That is
¼ of the float32 memory plus 12 bytes a row.

:func:`exact_topk_quantised` answers a top-k cosine query with **the same ids
and scores as** :func:`sentient_kernels.holographic.topk_cosine` on the float32
codes, reading the float32 rows of a few candidates only:

1. The query is quantised to int16 (``q̂ = Q/|Q| ≈ t · p``), so every
   ``p · c`` is an exact int32 sum (no rounding; |p| is capped so it cannot
   overflow), two ``vpdpbusd`` per 32 columns on a CPU with AVX-VNNI
   (:mod:`sentient_kernels.dot_i8`; a plain loop elsewhere). One parallel pass over the
   int8 matrix gives each row an estimate ``a`` and a rigorous radius ``r`` with
   ``a − r ≤ score ≤ a + r`` (score = the float32 kernel's score)::

       q̂·x = t·s·(p·c) + t·p·(x − s·c) + (q̂ − t·p)·x
       |t·p·(x − s·c)| ≤ t·‖p‖·bound      (Cauchy–Schwarz, bound ≥ ‖x − s·c‖)
       |(q̂ − t·p)·x|   ≤ ‖q̂ − t·p‖·‖x‖

   divided by ``‖x‖`` for the cosine (``normalized=False``), plus a slack:
   1e-6 relative to ``|a|``, ``r`` and (``normalized=True``) ``‖x‖``, and 1e-8
   absolute. It covers float32 storage of the norm, float64 rounding here and
   the float32 kernel's own rounding of the score (its float64 dot is off by at
   most ``D·2⁻⁵³·‖x‖`` < 2e-9·‖x‖ for any D the int32 sums allow) with room.
2. ``T`` = the k-th largest lower bound ``a − r``: at least k rows score ``≥ T``.
   A row with ``a + r < T`` scores strictly below k rows, so it cannot be in the
   top k, not even by a tie. Every other valid row is a candidate.
3. The candidates' float32 rows are gathered in ascending row order and ranked
   by the float32 kernel itself (``holographic._topk_into``), so scores are
   bit-identical and ties go to the lower row index as there.

Rows the bound cannot describe in float32 (norm outside [1e-30, 1e30]) get an
infinite bound and are always candidates: they are re-scored exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np
from numba import prange

from sentient_kernels import holographic
from sentient_kernels.checks import check_array, check_int
from sentient_kernels.config import jit
from sentient_kernels.dot_i8 import P_MAX, dot_row, prefetch_row, split_query

__all__ = [
    "CompactScan",
    "Gather",
    "QuantisedCodes",
    "exact_topk_quantised",
    "gathered",
    "quantise",
]

# Blocks of rows are the parallel unit of the scan (each keeps its own k best
# lower bounds); a few per thread balance masked rows.
_BLOCKS_PER_THREAD = 8
_MIN_BLOCK_ROWS = 4096
# Rows per chunk of a block: their dots and bounds (20 KB) stay in L1 between the
# passes. 1M rows × 256, one thread, ms a query in one run: 64 rows 29.5, 256 25.4,
# 1024 23.7, 2048/4096 the same as 1024 (fewer switches between the passes).
_CHUNK = 1024
# Rows between a row's prefetch and its dot (1M rows × 256, one thread: 4, 8, 16
# and 32 rows took 30, 29, 32 and 36 ms a query; none 39 ms).
_AHEAD = 8
# Relative and absolute slack of the bound (see the module docstring).
_REL_SLACK = 1e-6
_ABS_SLACK = 1e-8
_INT32_MAX = 2**31 - 1


class QuantisedCodes(NamedTuple):
    """int8 codes with what an exact search needs per row (see :func:`quantise`)."""

    codes: np.ndarray
    """(M, D) int8: ``round(x / scale)``, in [-127, 127]."""
    scales: np.ndarray
    """(M,) float32: ``max |x| / 127`` (0 for a zero row)."""
    bounds: np.ndarray
    """(M,) float32: ``≥ ‖x − scale · codes‖`` (inf: always re-score the row)."""
    norms: np.ndarray
    """(M,) float32: ``‖x‖`` rounded to float32."""


# --------------------------------------------------------------------- kernels


@jit(parallel=True)
def _quantise(x, out, scales, bounds, norms):
    """Quantise every row; returns the first non-finite row, or -1."""
    m, d = x.shape
    bad = np.full(m, -1, dtype=np.int64)
    for i in prange(m):
        row = x[i]
        amax = 0.0
        nn = 0.0
        for j in range(d):
            v = np.float64(row[j])
            nn += v * v
            a = abs(v)
            if a > amax:
                amax = a
        if not math.isfinite(nn):
            bad[i] = i
            continue
        s = np.float32(amax / 127.0)
        norm = math.sqrt(nn)
        if amax == 0.0 or s == 0.0:
            for j in range(d):
                out[i, j] = 0
            scales[i] = 0.0
            norms[i] = 0.0
            # A zero row scores exactly 0; a row whose scale underflows is re-scored.
            bounds[i] = 0.0 if amax == 0.0 else np.inf
            continue
        s64 = np.float64(s)
        err = 0.0
        for j in range(d):
            c = min(127.0, max(-127.0, float(round(np.float64(row[j]) / s64))))
            out[i, j] = np.int8(c)
            e = np.float64(row[j]) - c * s64
            err += e * e
        scales[i] = s
        norms[i] = np.float32(norm)
        if 1e-30 < norm < 1e30:
            # Round the float64 error norm up to the next float32 (plus 1 ulp).
            # float64 sums of d squares are off by < d·2⁻⁵³ relative.
            b = np.float32(math.sqrt(err) * (1.0 + d * 2.0**-50))
            bounds[i] = np.nextafter(b, np.float32(np.inf))
        else:
            bounds[i] = np.inf
    first = -1
    for i in range(m):
        if bad[i] >= 0:
            first = i
            break
    return first


@jit()
def _quantise_query(query, pmax, p):
    """int16 ``p`` with ``query/|query| ≈ t·p``; returns (t, ‖p‖, ‖query/|query| − t·p‖)."""
    d = query.shape[0]
    qq = 0.0
    for j in range(d):
        v = np.float64(query[j])
        qq += v * v
    qn = math.sqrt(qq)
    amax = 0.0
    for j in range(d):
        a = abs(np.float64(query[j])) / qn
        if a > amax:
            amax = a
    t = amax / pmax
    pp = 0.0
    ee = 0.0
    for j in range(d):
        u = np.float64(query[j]) / qn
        c = min(float(pmax), max(-float(pmax), round(u / t)))
        p[j] = np.int16(c)
        pp += c * c
        e = u - c * t
        ee += e * e
    return t, math.sqrt(pp), math.sqrt(ee)


@jit()
def _push_min(heap, n, v):
    """Add v to a min-heap of size n (root = smallest)."""
    c = n
    while c > 0:
        par = (c - 1) >> 1
        if v < heap[par]:
            heap[c] = heap[par]
            c = par
        else:
            break
    heap[c] = v


@jit()
def _replace_min(heap, n, v):
    """Replace the root of a full min-heap of size n by v (v > root)."""
    c = 0
    while True:
        left = 2 * c + 1
        if left >= n:
            break
        w = left
        if left + 1 < n and heap[left + 1] < heap[left]:
            w = left + 1
        if heap[w] < v:
            heap[c] = heap[w]
            c = w
        else:
            break
    heap[c] = v


@jit(inline=True)
def _bounds_dot(dots, scales, bounds, norms, c0, c1, t, pnorm, enorm, ups, lows):
    """Upper/lower score bounds of rows ``c0..c1-1`` for ``score = q·x / |q|`` (one SIMD loop)."""
    for i in range(c0, c1):
        a = t * np.float64(scales[i]) * np.float64(dots[i - c0])
        nx = np.float64(norms[i])
        r = t * pnorm * np.float64(bounds[i]) + enorm * nx
        # The kernel's own rounding grows with ‖x‖ here (no division by it).
        r = r * (1.0 + _REL_SLACK) + _REL_SLACK * (abs(a) + nx) + _ABS_SLACK
        ups[i - c0] = a + r
        lows[i - c0] = a - r


@jit(inline=True)
def _bounds_cosine(dots, scales, bounds, norms, c0, c1, t, pnorm, enorm, ups, lows):
    """As :func:`_bounds_dot` for the cosine ``q·x / (|q| |x|)``."""
    for i in range(c0, c1):
        nx = np.float64(norms[i])
        bd = np.float64(bounds[i])
        inv = 1.0 / nx if nx > 0.0 else 0.0
        a = t * np.float64(scales[i]) * np.float64(dots[i - c0]) * inv
        # A zero row: a = 0 and r = its bound (0, or inf if re-scored).
        r = t * pnorm * bd * inv + enorm if nx > 0.0 else bd
        r = r * (1.0 + _REL_SLACK) + _REL_SLACK * abs(a) + _ABS_SLACK
        ups[i - c0] = a + r
        lows[i - c0] = a - r


@jit(inline=True)
def _none_reach(ups, n, root):
    """True if no ``ups[:n]`` is ``>= root`` (a counting loop: it vectorises, a search would not).

    With a full heap, such a chunk changes nothing: a row enters the heap only
    if its lower bound, hence its upper bound, beats the root, and is kept as
    a candidate only if its upper bound reaches the root. Rows of the chunk
    that the mask leaves out may count here (their bounds are stale): that can
    only make the chunk go the slow way.
    """
    hits = 0
    for i in range(n):
        hits += ups[i] >= root
    return hits == 0


@jit(parallel=True)
def _scan_bounds(
    q_codes,
    scales,
    bounds,
    norms,
    p,
    h,
    lo,
    corr,
    t,
    pnorm,
    enorm,
    normalized,
    has_mask,
    valid,
    block_rows,
    heap,
    heap_n,
    cand_row,
    cand_up,
    cand_n,
):
    """Per block: the kb best lower bounds, and the rows that may reach them with their upper bounds.

    Block ``b`` writes its heap to ``heap[b]`` (fill ``heap_n[b]``) and its
    ``cand_n[b]`` candidate rows (ascending) and upper bounds to
    ``cand_row``/``cand_up`` from ``b * block_rows`` on.

    Rows go in chunks of ``_CHUNK``: first the integer dots of the chunk, then
    the bounds of the whole chunk in one loop that vectorises across rows
    (done row by row after each dot it cost a third of the scan), then the
    heap, which only a few rows enter.
    """
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
                # Ask for the row _AHEAD rows on now, so the scan does not
                # wait on memory latency at 1M rows.
                if i + _AHEAD < stop:
                    prefetch_row(q_codes, i + _AHEAD)
                if not (has_mask and valid[i] == 0):
                    dots[i - c0] = dot_row(q_codes, i, p, h, lo, corr)
            if normalized:
                _bounds_dot(dots, scales, bounds, norms, c0, c1, t, pnorm, enorm, ups, lows)
            else:
                _bounds_cosine(dots, scales, bounds, norms, c0, c1, t, pnorm, enorm, ups, lows)
            if n == kb and _none_reach(ups, c1 - c0, heap[b, 0]):
                continue
            for i in range(c0, c1):
                if has_mask and valid[i] == 0:
                    continue
                low = lows[i - c0]
                if n < kb:
                    _push_min(heap[b], n, low)
                    n += 1
                elif low > heap[b, 0]:
                    _replace_min(heap[b], kb, low)
                # The root only rises, so a row below it now is below the final
                # threshold too: only rows that might still reach it are kept.
                if n < kb or ups[i - c0] >= heap[b, 0]:
                    cand_row[start + nc] = i
                    cand_up[start + nc] = ups[i - c0]
                    nc += 1
        cand_n[b] = nc
        heap_n[b] = n


@jit()
def _threshold(heap, heap_n, kk):
    """The kk-th largest lower bound over all block heaps (``-inf`` if some bound is -inf)."""
    total = 0
    for b in range(heap_n.shape[0]):
        total += heap_n[b]
    allv = np.empty(total)
    pos = 0
    for b in range(heap_n.shape[0]):
        for t in range(heap_n[b]):
            allv[pos] = heap[b, t]
            pos += 1
    allv.sort()
    v = allv[total - kk]
    return v if not math.isnan(v) else -np.inf


@jit()
def _candidates_at(block_rows, cand_row, cand_up, cand_n, thr):
    """The candidate rows whose upper bound reaches ``thr``, ascending.

    Blocks are visited in order and keep their rows ascending, so the rows come
    out ascending and a float32 kernel's "lower index wins" tie rule carries over.
    """
    nc = 0
    for b in range(cand_n.shape[0]):
        for c in range(b * block_rows, b * block_rows + cand_n[b]):
            if cand_up[c] >= thr:
                nc += 1
    rows = np.empty(nc, dtype=np.int64)
    pos = 0
    for b in range(cand_n.shape[0]):
        for c in range(b * block_rows, b * block_rows + cand_n[b]):
            if cand_up[c] >= thr:
                rows[pos] = cand_row[c]
                pos += 1
    return rows


@jit()
def _rank_gathered(sub, rows, query, kk, normalized, out_ids, out_scores):
    """Rank the candidates' float32 rows ``sub`` (of ``rows``, ascending) with the float32
    kernel. Returns the number of candidates, or a negative status of ``_topk_into``."""
    # Valid bounds give at least kk candidates (the kk rows behind the threshold);
    # fewer means the quantised arrays do not describe the float32 rows (e.g. NaN bounds).
    if rows.shape[0] < kk:
        return -4
    mask = np.ones(1, dtype=np.uint8)
    local = np.empty(kk, dtype=np.int64)
    got = holographic._topk_into(sub, query, kk, normalized, False, mask, local, out_scores)
    if got < 0:
        return got
    for t in range(kk):
        out_ids[t] = rows[local[t]]
    return rows.shape[0]


@jit()
def _rescore(
    full_codes,
    query,
    kk,
    normalized,
    block_rows,
    cand_row,
    cand_up,
    cand_n,
    thr,
    out_ids,
    out_scores,
):
    """Gather the candidates (upper bound ``>= thr``) and rank them with the float32 kernel."""
    rows = _candidates_at(block_rows, cand_row, cand_up, cand_n, thr)
    d = full_codes.shape[1]
    sub = np.empty((rows.shape[0], d), dtype=np.float32)
    for pos in range(rows.shape[0]):
        for j in range(d):
            sub[pos, j] = full_codes[rows[pos], j]
    return _rank_gathered(sub, rows, query, kk, normalized, out_ids, out_scores)


# --------------------------------------------------------------------- wrappers


Gather = Callable[[np.ndarray], np.ndarray]
"""``gather(rows)``: the float32 rows at the ascending indices ``rows``, (len(rows), D)."""


class CompactScan(NamedTuple):
    """What a full scan needs to run on int8 codes: the quantised rows, and optionally
    how to read candidates' float32 rows (:data:`Gather`)."""

    quantised: QuantisedCodes
    gather: Gather | None = None


def gathered(gather: Gather, rows: np.ndarray, d: int) -> np.ndarray:
    """``gather(rows)`` checked: float32, C-contiguous, (len(rows), d)."""
    return check_array(
        "gather(rows)", gather(rows), dtype=np.float32, shape=(rows.shape[0], d), finite=False
    )


def quantise(codes: np.ndarray) -> QuantisedCodes:
    """Quantise float32 code rows to int8 with a per-row scale and error bound.

    Parameters
    ----------
    codes : (M, D) float32, C-contiguous, finite

    Returns
    -------
    QuantisedCodes
        ``codes`` (M, D) int8, ``scales``, ``bounds`` and ``norms`` (M,) float32,
        with ``‖codes[i] − scales[i] · q.codes[i]‖ ≤ bounds[i]``.

    Raises
    ------
    ValueError
        If a row holds NaN or inf (named by its index).
    """
    codes = check_array("codes", codes, dtype=np.float32, ndim=2, finite=False)
    m, d = codes.shape
    out = np.empty((m, d), dtype=np.int8)
    scales = np.empty(m, dtype=np.float32)
    bounds = np.empty(m, dtype=np.float32)
    norms = np.empty(m, dtype=np.float32)
    bad = _quantise(codes, out, scales, bounds, norms)
    if bad >= 0:
        raise ValueError(f"codes contains non-finite value(s) (NaN or inf) in row {bad}")
    return QuantisedCodes(out, scales, bounds, norms)


def _query_pmax(d: int) -> int:
    """Largest |p_j| of the int16 query: Σ p_j c_j (|c_j| ≤ 127) stays inside int32,
    and each p_j splits into two signed bytes (:data:`dot_i8.P_MAX`)."""
    return min(P_MAX, _INT32_MAX // (127 * max(d, 1)))


def _check_quantised(q: object, full: np.ndarray) -> QuantisedCodes:
    if not isinstance(q, QuantisedCodes):
        raise TypeError(f"quantised must be a QuantisedCodes (from quantise()), got {type(q)}")
    m = full.shape[0]
    codes = check_array("quantised.codes", q.codes, dtype=np.int8, shape=full.shape)
    scales = check_array("quantised.scales", q.scales, dtype=np.float32, shape=(m,), finite=False)
    bounds = check_array("quantised.bounds", q.bounds, dtype=np.float32, shape=(m,), finite=False)
    norms = check_array("quantised.norms", q.norms, dtype=np.float32, shape=(m,), finite=False)
    return QuantisedCodes(codes, scales, bounds, norms)


def exact_topk_quantised(
    quantised: QuantisedCodes,
    full_codes: np.ndarray,
    query: np.ndarray,
    k: int,
    *,
    normalized: bool = False,
    valid: np.ndarray | None = None,
    gather: Gather | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k cosine from int8 codes: :func:`holographic.topk_cosine`'s ids and scores.

    Parameters
    ----------
    quantised : QuantisedCodes
        ``quantise(full_codes)`` (trusted, not re-checked: it would cost the
        full read this function avoids).
    full_codes : (M, D) float32, C-contiguous
        The float32 codes (a RAM mirror or an ``np.memmap``); only candidate
        rows are read. NaN/inf in a candidate row raise ValueError.
    query : (D,) float32
        Finite, not all zero.
    k : int
        Number of rows wanted, >= 1.
    normalized, valid
        As in :func:`holographic.topk_cosine`.
    gather : callable, optional
        ``gather(rows)`` gives the float32 rows at the ascending indices ``rows``,
        (len(rows), D), in place of ``full_codes[rows]``: e.g. read from the
        store's file, so that a mapping's pages (whole folios around each row)
        are not faulted into the process.

    Returns
    -------
    indices : (k',) int64
        Best first, ties to the lower index; ``k' = min(k, valid rows)``.
    scores : (k',) float64
        Bit-identical to :func:`holographic.topk_cosine`'s.
    """
    ids, scores, _ = exact_topk_quantised_stats(
        quantised, full_codes, query, k, normalized=normalized, valid=valid, gather=gather
    )
    return ids, scores


def exact_topk_quantised_stats(
    quantised: QuantisedCodes,
    full_codes: np.ndarray,
    query: np.ndarray,
    k: int,
    *,
    normalized: bool = False,
    valid: np.ndarray | None = None,
    gather: Gather | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`exact_topk_quantised` plus the number of candidates re-scored in float32."""
    full_codes = check_array("full_codes", full_codes, dtype=np.float32, ndim=2, finite=False)
    m, d = full_codes.shape
    q = _check_quantised(quantised, full_codes)
    query = check_array("query", query, dtype=np.float32, shape=(d,))
    k = check_int("k", k, lo=1)
    if not query.any():
        raise ValueError("query must not be all zeros (its cosine is undefined)")
    if valid is None:
        has_mask = False
        mask = np.ones(1, dtype=np.uint8)
        n_valid = m
    else:
        has_mask = True
        mask = holographic._check_valid(valid, m)
        n_valid = int(np.count_nonzero(mask))
    kk = min(k, n_valid)
    out_i = np.empty(kk, dtype=np.int64)
    out_s = np.empty(kk, dtype=np.float64)
    if kk == 0:
        return out_i, out_s, 0
    pmax = _query_pmax(d)
    if pmax < 1:
        raise ValueError(f"codes have too many columns ({d}) for int32 accumulation")
    p = np.empty(d, dtype=np.int16)
    t, pnorm, enorm = _quantise_query(query, pmax, p)
    block_rows = max(_MIN_BLOCK_ROWS, -(-m // (_BLOCKS_PER_THREAD * numba.get_num_threads())))
    nblocks = -(-m // block_rows)
    kb = min(kk, block_rows)
    heap = np.empty((nblocks, kb), dtype=np.float64)
    heap_n = np.empty(nblocks, dtype=np.int64)
    # One slot per row, but a block writes only the few rows that may reach
    # its heap: the pages behind the rest are never touched.
    cand_row = np.empty(m, dtype=np.int64)
    cand_up = np.empty(m, dtype=np.float64)
    cand_n = np.empty(nblocks, dtype=np.int64)
    h = np.empty(d, dtype=np.int8)
    lo = np.empty(d, dtype=np.int8)
    corr = split_query(p, h, lo)
    _scan_bounds(
        q.codes, q.scales, q.bounds, q.norms, p, h, lo, corr, t, pnorm, enorm, bool(normalized),
        has_mask, mask, block_rows, heap, heap_n, cand_row, cand_up, cand_n,
    )  # fmt: skip
    thr = _threshold(heap, heap_n, kk)
    if gather is None:
        nc = _rescore(
            full_codes, query, kk, bool(normalized), block_rows, cand_row, cand_up, cand_n, thr,
            out_i, out_s,
        )  # fmt: skip
    else:
        rows = _candidates_at(block_rows, cand_row, cand_up, cand_n, thr)
        sub = gathered(gather, rows, d)
        nc = _rank_gathered(sub, rows, query, kk, bool(normalized), out_i, out_s)
    if nc == -4:
        raise ValueError(
            f"quantised does not describe full_codes: fewer than k={kk} rows can reach the"
            " top k (NaN or stale bounds? use quantise(full_codes))"
        )
    if nc < 0:
        raise ValueError("full_codes contains non-finite value(s) (NaN or inf) in a candidate row")
    return out_i, out_s, int(nc)


def _warmup() -> None:
    codes = np.ones((3, 4), dtype=np.float32)
    q = quantise(codes)
    query = np.ones(4, dtype=np.float32)
    exact_topk_quantised(q, codes, query, 2)
    exact_topk_quantised(q, codes, query, 2, normalized=True, valid=np.ones(3, dtype=np.bool_))
    frozen = np.ones(4, dtype=np.float32)
    frozen.setflags(write=False)
    exact_topk_quantised(q, codes, frozen, 2, normalized=True, valid=np.ones(3, dtype=np.bool_))
