"""Exact BM25 top-k that skips most postings: block-max MaxScore over posting segments.

The scores, the top-k and its order (score descending, ties to the lower row)
are exactly those of :func:`sentient_kernels.bm25.topk`, which adds every
posting of every query term into an accumulator: every row that can reach the
top-k is scored by the same float64 operations in the same query-term order,
bit for bit; only rows that provably cannot are skipped.

How (Turtle & Flood's MaxScore, document at a time, one segment after the
other, with per-block bounds as in block-max WAND):

* A query term's contribution to a row is its weight ``w·idf`` times the tf
  factor, and each segment's :class:`~sentient_kernels.segments.Bounds` give
  the largest factor of every block of 64 postings and of every list (at the
  query's mean length: :func:`sentient_kernels.bounds.factor_scale`).
* The terms of a segment are sorted by bound; the longest prefix whose bounds
  add up to less than the threshold is *non-essential*: a row holding only
  those terms cannot reach the top-k, so candidates are the rows of the
  *essential* terms, and the non-essential lists are probed (galloping search)
  for a candidate only while its partial score plus the bounds not yet probed
  can reach the threshold. Frequent terms have small idf, hence small bounds:
  their long lists are probed, not read.
* Before a candidate is scored, the bounds of the essential lists' current
  blocks plus the non-essential bounds are tested: when they cannot reach the
  threshold, every row up to the first end of those blocks is skipped at once.
* Document frequencies are counted per segment from the posting offsets (rows
  at or above ``n`` cut by binary search); the rows a mask retires are looked
  up in the lists (or the list is scanned when they are many), so ``df`` is
  exactly the exhaustive kernel's.

The threshold is the k-th score found (:func:`_threshold`; the hybrid of
:mod:`sentient_kernels.maxscore_hybrid` derives a BM25 threshold from its k-th
hybrid score). Rounding: a bound and a threshold are compared with a relative
slack of :data:`_SLACK` (far above the float64 error of a sum of a few dozen
terms), so a row is skipped only if its exact score is below the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sentient_kernels.bm25 import (
    _COS_CEIL,
    _NO_ROWS,
    K1,
    NO_DF,
    B,
    _check_query,
    _cosine,
    _fuse,
    _idf,
    _offer,
    _sorted_order,
    warmup_index,
)
from sentient_kernels.bounds import _tf_factor, factor_scale
from sentient_kernels.checks import check_int
from sentient_kernels.config import jit
from sentient_kernels.holographic import _dot_f32
from sentient_kernels.scored_hybrid import _extra
from sentient_kernels.segments import BLOCK, Packed, Segment

__all__ = ["retired_rows", "topk", "topk_unchecked"]

# Bit-reproducible against the exhaustive kernels: no fast-math anywhere here.
_jit = jit(fastmath=False)

# Relative slack of every pruning comparison (see the module docstring).
_SLACK = 1e-9

# A bad row is looked up in a list (binary search) rather than the list scanned
# for bad rows when that costs fewer steps; a lookup costs about this many.
_LOOKUP_COST = 24

_BIG = np.int64(2**62)

# --------------------------------------------------------------------- kernels


@_jit
def _lower_bound(a, lo, hi, x):
    """First position in ``a[lo:hi]`` (ascending) holding a value >= x (``hi`` if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def _gallop(a, lo, hi, x):
    """As :func:`_lower_bound`, cheap when the answer is near ``lo`` (doubling steps first)."""
    if lo >= hi or a[lo] >= x:
        return lo
    step = 1
    prev = lo
    cur = lo + 1
    while cur < hi and a[cur] < x:
        prev = cur
        step <<= 1
        cur = lo + step
    if cur > hi:
        cur = hi
    return _lower_bound(a, prev + 1, cur, x)


@_jit
def _bounded(weight, f, scale):
    """Bound of a contribution of weight ``weight`` whose stored factor bound is ``f``."""
    if scale < 0.0:
        return weight  # the stored factors do not apply: a factor is at most 1
    return weight * min(1.0, f * scale)


@_jit
def _df(rows, a, z, has_mask, valid, bad):
    """Valid rows among postings ``a:z`` (``bad``: the masked-out rows, ascending)."""
    count = z - a
    if not has_mask or count == 0 or bad.size == 0:
        return count
    b0 = _lower_bound(bad, 0, bad.size, rows[a])
    b1 = _lower_bound(bad, b0, bad.size, rows[z - 1] + 1)
    if (b1 - b0) * _LOOKUP_COST < count:
        for t in range(b0, b1):
            p = _lower_bound(rows, a, z, bad[t])
            if p < z and rows[p] == bad[t]:
                count -= 1
    elif b1 > b0:
        for p in range(a, z):
            if valid[rows[p]] == 0:
                count -= 1
    return count


@_jit
def _plan(
    seg,
    qterms,
    qweights,
    n,
    has_mask,
    valid,
    bad,
    stats,
    lo,
    hi,
    blk0,
    ub,
    scale,
    weight,
    idf,
    df_given,
):
    """Each query term's postings per segment, its df, idf, weight and bounds.

    ``seg`` is (terms, starts, rows, blocks, term_f, params) of the packed
    segments, ``stats`` (n_docs, avgdl, k1, b). Fills ``lo``/``hi`` (Q, S):
    the term's postings of rows below ``n`` in segment ``s``; ``blk0`` (Q, S):
    the first block of its list; ``ub`` (Q, S): the bound of its contribution
    there; ``scale`` (S,): :func:`~sentient_kernels.bounds.factor_scale`;
    ``weight`` (Q,): ``w · idf``; ``idf`` (Q,): 0 when no valid row below ``n``
    holds the term. ``bad``: the masked-out rows below ``n``, ascending. ``df_given``
    (int64): each query term's document frequency in a corpus these rows are part of
    (a shard's), used instead of the count here; empty: counted here.
    """
    seg_terms, seg_starts, seg_rows, seg_blocks, seg_termf, seg_params = seg
    n_docs, avgdl, k1, b = stats
    nq = qterms.size
    ns = len(seg_terms)
    given = df_given.size > 0
    tix = np.zeros((nq, ns), dtype=np.int64)
    for s in range(ns):
        scale[s] = factor_scale(seg_params[s], avgdl, k1, b)
    for j in range(nq):
        df = 0
        for s in range(ns):
            lo[j, s] = 0
            hi[j, s] = 0
            blk0[j, s] = 0
            terms = seg_terms[s]
            t = np.searchsorted(terms, qterms[j])
            if t >= terms.size or terms[t] != qterms[j]:
                continue
            rows = seg_rows[s]
            a = seg_starts[s][t]
            z = seg_starts[s][t + 1]
            if rows[z - 1] >= n:
                z = _lower_bound(rows, a, z, n)
            lo[j, s] = a
            hi[j, s] = z
            blk0[j, s] = seg_blocks[s][t]
            tix[j, s] = t
            if not given:
                df += _df(rows, a, z, has_mask, valid, bad)
        if given:
            df = df_given[j]
        idf[j] = _idf(n_docs, df) if df > 0 else 0.0
        weight[j] = qweights[j] * idf[j]
        for s in range(ns):
            ub[j, s] = 0.0
            if hi[j, s] > lo[j, s]:
                ub[j, s] = _bounded(weight[j], seg_termf[s][tix[j, s]], scale[s])


@_jit
def _threshold(hs, nh, kk, hybrid, ceil, alpha, ov):
    """The BM25 score a row must reach (with slack) to still enter the heap; -inf if not full."""
    if nh < kk:
        return -np.inf
    if not hybrid:
        return hs[0]
    if ov[0]:
        # Scored: w_rel·(bm25/ceil + α·cos_max)/(1 + α) + e_max must reach hs[0] − tol.
        w_rel, e_max, w_rec = ov[1], ov[2], ov[3]
        tol = _tol(hs[0], e_max, w_rel, w_rec)
        return ((hs[0] - e_max - tol) * (1.0 + alpha) / w_rel - alpha * _COS_CEIL) * ceil
    # bm25/ceil + α·cos_max must reach (1 + α)·hs[0]; _COS_CEIL's slack covers the rounding.
    return (hs[0] * (1.0 + alpha) - alpha * _COS_CEIL) * ceil


@_jit
def _tol(h, v, w_rel, w_rec):
    """Room for the rounding of a scored score near ``h`` bounded by ``v`` (far above it)."""
    return 1e-12 * (abs(h) + abs(v) + 4.0 * abs(w_rel) + 2.0 * abs(w_rec))


@_jit
def _no_overlay():
    """The ``ov`` argument of :func:`_daat` for BM25 and the hybrid (no scorer overlay)."""
    z = np.zeros(1)
    return (False, 1.0, 0.0, 0.0, z, z, 0.0, 1.0)


@_jit
def _essential(cum, m, e, thr):
    """Number of non-essential terms (a prefix of the bound order) at threshold ``thr``, >= ``e``."""
    while e < m and cum[e] * (1.0 + _SLACK) < thr:
        e += 1
    return e


@_jit
def _is_skipped(skip, r):
    """True if ``r`` is in ``skip`` (ascending)."""
    p = _lower_bound(skip, 0, skip.size, r)
    return p < skip.size and skip[p] == r


@_jit
def _daat(idx, plan, has_mask, valid, bm, hybrid, ceil, alpha, cos, ov, skip, hs, hidx, nh):
    """Block-max MaxScore over every segment into the heap ``hs``/``hidx`` holding ``nh``.

    Offers each row that may enter with its exact score: its BM25 (``hybrid``
    False), or ``_fuse(cos, bm25/ceil, α)`` (``hybrid`` True; rows in ``skip``
    are not offered, they are in the heap already). Returns the heap's fill.
    ``idx`` is (rows, tfs, block_f) of the packed segments, ``plan`` (lo, hi,
    blk0, ub, scale, weight) from :func:`_plan`, ``bm`` (doc_len, avgdl, k1,
    b), ``cos`` (codes, q64, inv_qnorm, q32, margin): the cosine's inputs
    (:func:`~sentient_kernels.bm25._cosine`) and a float32 estimate's (the
    query in float32, the estimate's error bound; < 0: no estimate). ``ov``
    (scored, w_rel > 0, e_max, w_rec, static, last_access, now, recency_s):
    when ``scored`` (with ``hybrid``) a row's score is the scored hybrid's
    ``w_rel·hybrid + static + w_rec·recency`` (:mod:`sentient_kernels.maxscore_scored`)
    and ``e_max`` bounds ``static + w_rec·recency`` over every valid row.
    """
    seg_rows, seg_tfs, seg_blockf = idx
    lo, hi, blk0, ub, scale, weight = plan
    doc_len, avgdl, k1, b = bm
    codes, q64, inv_qnorm, q32, margin = cos
    scored, w_rel, _, w_rec, static, last_access, now, recency_s = ov
    rec_bound = max(0.0, w_rec)  # recency is at most 1
    nq = weight.size
    ns = len(seg_rows)
    kk = hs.size
    inv_ceil = 1.0 / ceil if ceil > 0.0 else 0.0
    div = 1.0 + alpha
    pos = np.zeros(nq, dtype=np.int64)
    bend = np.zeros(nq, dtype=np.int64)  # end of the block holding pos[j]
    bub = np.zeros(nq)  # the bound of that block
    contrib = np.zeros(nq)
    present = np.zeros(nq, dtype=np.uint8)
    order = np.empty(nq, dtype=np.int64)
    cum = np.empty(nq)
    for s in range(ns):
        rows = seg_rows[s]
        tfs = seg_tfs[s]
        block_f = seg_blockf[s]
        sc = scale[s]
        m = 0
        for j in range(nq):
            if hi[j, s] > lo[j, s] and weight[j] > 0.0:
                pos[j] = lo[j, s]
                bend[j] = lo[j, s]  # no block entered yet
                # Insertion by bound, ascending (a handful of terms).
                i = m
                while i > 0 and ub[order[i - 1], s] > ub[j, s]:
                    order[i] = order[i - 1]
                    i -= 1
                order[i] = j
                m += 1
        if m == 0:
            continue
        total = 0.0
        for i in range(m):
            total += ub[order[i], s]
            cum[i] = total
        thr = _threshold(hs, nh, kk, hybrid, ceil, alpha, ov)
        e = _essential(cum, m, 0, thr)
        # Rows up to win_last passed the block test at threshold win_thr.
        win_last = np.int64(-1)
        win_thr = -np.inf
        while e < m:
            d = _BIG
            for i in range(e, m):
                j = order[i]
                if pos[j] < hi[j, s] and rows[pos[j]] < d:
                    d = np.int64(rows[pos[j]])
            if d == _BIG:
                break
            if thr > -np.inf and (d > win_last or thr != win_thr):
                # Every row from d to the first end of an essential list's current
                # block gets at most those blocks' bounds plus the non-essential ones.
                bound = cum[e - 1] if e > 0 else 0.0
                last = _BIG
                for i in range(e, m):
                    j = order[i]
                    p = pos[j]
                    if p >= hi[j, s]:
                        continue
                    if p >= bend[j]:
                        k = (p - lo[j, s]) // BLOCK
                        bend[j] = min(lo[j, s] + (k + 1) * BLOCK, hi[j, s])
                        bub[j] = _bounded(weight[j], block_f[blk0[j, s] + k], sc)
                    bound += bub[j]
                    r = np.int64(rows[bend[j] - 1])
                    if r < last:
                        last = r
                if bound * (1.0 + _SLACK) < thr:
                    for i in range(e, m):
                        j = order[i]
                        if pos[j] < hi[j, s]:
                            pos[j] = _gallop(rows, pos[j], hi[j, s], last + 1)
                    continue
                win_last = last
                win_thr = thr
            live = not (has_mask and valid[d] == 0)
            part = 0.0
            for i in range(e, m):
                j = order[i]
                p = pos[j]
                if p < hi[j, s] and rows[p] == d:
                    if live:
                        c = weight[j] * _tf_factor(np.float64(tfs[p]), doc_len[d], avgdl, k1, b)
                        contrib[j] = c
                        present[j] = 1
                        part += c
                    pos[j] = p + 1
            if not live:
                continue
            lost = False
            for i in range(e - 1, -1, -1):
                if (part + cum[i]) * (1.0 + _SLACK) < thr:
                    lost = True
                    break
                j = order[i]
                p = _gallop(rows, pos[j], hi[j, s], d)
                pos[j] = p
                if p < hi[j, s] and rows[p] == d:
                    c = weight[j] * _tf_factor(np.float64(tfs[p]), doc_len[d], avgdl, k1, b)
                    contrib[j] = c
                    present[j] = 1
                    part += c
            if not lost and part * (1.0 + _SLACK) < thr:
                lost = True
            score = 0.0
            for j in range(nq):  # in query-term order, as the exhaustive kernel adds them
                if present[j] != 0:
                    score += contrib[j]
                    present[j] = 0
            if lost:
                continue
            if scored:
                rel = score * inv_ceil
                if nh == kk:
                    # Its own static with the largest cosine and recency, then its
                    # recency and the cosine's float32 estimate (as the hybrid below).
                    cap = w_rel * (rel + alpha * _COS_CEIL) / div + static[d] + rec_bound
                    if cap + _tol(hs[0], cap, w_rel, w_rec) < hs[0]:
                        continue
                x = _extra(static, last_access, d, w_rec, now, recency_s)
                if nh == kk and margin >= 0.0:
                    est = _dot_f32(codes[d], q32) * inv_qnorm + margin
                    cap = w_rel * (rel + alpha * est) / div + x
                    if cap + _tol(hs[0], cap, w_rel, w_rec) < hs[0]:
                        continue
                if _is_skipped(skip, d):
                    continue
                score = w_rel * _fuse(_cosine(codes, d, q64, inv_qnorm), rel, alpha) + x
            elif hybrid:
                rel = score * inv_ceil
                if nh == kk:
                    if (rel + alpha * _COS_CEIL) / div < hs[0]:
                        continue
                    # A float32 estimate of the cosine (vectorised) plus its error
                    # bound, before the exact one (serial float64, 3-4 times slower).
                    if margin >= 0.0:
                        est = _dot_f32(codes[d], q32) * inv_qnorm + margin
                        if (rel + alpha * est) / div < hs[0]:
                            continue
                if _is_skipped(skip, d):
                    continue
                score = _fuse(_cosine(codes, d, q64, inv_qnorm), rel, alpha)
            elif nh == kk and score < hs[0]:
                continue
            nh = _offer(hs, hidx, nh, kk, score, d)
            if nh == kk:
                thr = _threshold(hs, nh, kk, hybrid, ceil, alpha, ov)
                e = _essential(cum, m, e, thr)
    return nh


@_jit
def _planned(
    terms,
    starts,
    rows,
    blocks,
    term_f,
    params,
    qterms,
    qweights,
    n,
    has_mask,
    valid,
    bad,
    stats,
    df_given,
):
    """:func:`_plan` into new arrays: (lo, hi, blk0, ub, scale, weight) and the idf.

    An entry point: the typed lists come as separate arguments, never in a
    tuple (a tuple holding a typed list or an array is typed by Numba's slow
    path, several µs per element on every call).
    """
    nq = qterms.size
    ns = len(terms)
    lo = np.empty((nq, ns), dtype=np.int64)
    hi = np.empty((nq, ns), dtype=np.int64)
    blk0 = np.empty((nq, ns), dtype=np.int64)
    ub = np.empty((nq, ns))
    scale = np.empty(ns)
    weight = np.empty(nq)
    idf = np.empty(nq)
    seg = (terms, starts, rows, blocks, term_f, params)
    _plan(
        seg,
        qterms,
        qweights,
        n,
        has_mask,
        valid,
        bad,
        stats,
        lo,
        hi,
        blk0,
        ub,
        scale,
        weight,
        idf,
        df_given,
    )
    return (lo, hi, blk0, ub, scale, weight), idf


@_jit
def _topk(
    terms,
    starts,
    rows,
    tfs,
    blocks,
    block_f,
    term_f,
    params,
    qterms,
    qweights,
    n,
    has_mask,
    valid,
    bad,
    doc_len,
    stats,
    kk,
    df_given,
):
    """Plan, MaxScore and the sorted top-``kk`` in one call: (rows, scores, idf)."""
    plan, idf = _planned(
        terms,
        starts,
        rows,
        blocks,
        term_f,
        params,
        qterms,
        qweights,
        n,
        has_mask,
        valid,
        bad,
        stats,
        df_given,
    )
    _, avgdl, k1, b = stats
    hs = np.empty(kk)
    hidx = np.empty(kk, dtype=np.int64)
    cos = (np.zeros((1, 1), dtype=np.float32), np.zeros(1), 1.0, np.zeros(1, np.float32), -1.0)
    nh = _daat(
        (rows, tfs, block_f),
        plan,
        has_mask,
        valid,
        (doc_len, avgdl, k1, b),
        False,
        1.0,
        0.0,
        cos,
        _no_overlay(),
        np.zeros(0, dtype=np.int64),
        hs,
        hidx,
        0,
    )
    order = _sorted_order(hs, hidx, nh)
    out_rows = np.empty(nh, dtype=np.int64)
    out_scores = np.empty(nh)
    for t in range(nh):
        out_rows[t] = hidx[order[t]]
        out_scores[t] = hs[order[t]]
    return out_rows, out_scores, idf


# --------------------------------------------------------------------- wrappers


def retired_rows(valid: np.ndarray | None, n: int) -> np.ndarray:
    """The rows below ``n`` that ``valid`` (uint8) masks out, ascending (none for no mask)."""
    if valid is None:
        return _NO_ROWS
    live = valid[:n]
    if np.count_nonzero(live) == n:
        return _NO_ROWS
    return np.flatnonzero(live == 0)


def topk_unchecked(
    packed: Packed,
    n: int,
    valid: np.ndarray | None,
    doc_len: np.ndarray,
    n_docs: float,
    avgdl: float,
    terms: np.ndarray,
    weights: np.ndarray,
    k: int,
    k1: float = K1,
    b: float = B,
    df: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact BM25 top-k of rows below ``n`` (unchecked: inputs valid by construction).

    ``valid`` (uint8, None for every row) and ``doc_len`` (int32) are indexed
    by row; ``terms`` distinct uint64, ``weights`` float64 > 0. Returns the
    rows (best first, ties to the lower row, only rows sharing a term), their
    BM25 scores and each query term's idf. ``df`` (int64, one per term, >= 0):
    document frequencies given instead of counted (with ``n_docs`` and ``avgdl``,
    a whole corpus's statistics: see :func:`sentient_kernels.bm25.scores`).
    """
    has_mask = valid is not None
    return _topk(
        packed.terms,
        packed.starts,
        packed.rows,
        packed.tfs,
        packed.blocks,
        packed.block_f,
        packed.term_f,
        packed.params,
        terms,
        weights,
        n,
        has_mask,
        valid if has_mask else _ALL,
        retired_rows(valid, n),
        doc_len,
        (float(n_docs), float(avgdl), float(k1), float(b)),
        max(1, min(k, n)),
        NO_DF if df is None else df,
    )


def topk(
    segments: Sequence[Segment] | Packed,
    query_terms: np.ndarray,
    k: int,
    *,
    doc_len: np.ndarray,
    query_weights: np.ndarray | None = None,
    valid: np.ndarray | None = None,
    n_docs: float | None = None,
    avgdl: float | None = None,
    k1: float = K1,
    b: float = B,
    df: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Exact top-k rows by BM25, skipping what cannot reach it; as :func:`sentient_kernels.bm25.topk`.

    Same parameters and results, bit for bit (see the module docstring).
    """
    k = check_int("k", k, lo=1)
    q = _check_query(segments, query_terms, query_weights, doc_len, valid, n_docs, avgdl, k1, b, df)
    rows, scores, idf = topk_unchecked(
        q.packed,
        q.n,
        q.valid if q.has_mask else None,
        q.doc_len,
        q.n_docs,
        q.avgdl,
        q.terms,
        q.weights,
        k,
        q.k1,
        q.b,
        q.df,
    )
    return rows, scores, float(np.dot(q.weights, idf))


_ALL = np.ones(1, dtype=np.uint8)


def _warmup() -> None:
    seg, doc_len, terms, _ = warmup_index()
    topk([seg], terms, 2, doc_len=doc_len)
    valid = np.ones(2, dtype=np.uint8)
    topk([seg], terms, 2, doc_len=doc_len, valid=valid)
    df = np.ones(terms.shape[0], dtype=np.int64)
    topk([seg], terms, 2, doc_len=doc_len, valid=valid, n_docs=4.0, avgdl=2.0, df=df + 1)
