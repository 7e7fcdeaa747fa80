"""Exact hybrid (BM25 + cosine) top-k that skips most postings, on :mod:`sentient_kernels.maxscore`.

The score is :mod:`sentient_kernels.bm25`'s hybrid ``(bm25/ceiling + α·cos)/(1 + α)``
over every valid row; the rows, scores and order are exactly those of
:func:`sentient_kernels.bm25.hybrid_topk`, bit for bit. Three steps:

1. BM25's own top-k by block-max MaxScore; those rows get their cosine and
   fill the hybrid heap (a strong k-th score at once).
2. MaxScore again, at the BM25 threshold the k-th hybrid score implies: a row
   whose ``bm25/ceiling + α·cos_max`` (``cos_max`` the largest cosine a unit
   code has) is below ``(1 + α)`` times the k-th score loses, so its postings
   are skipped; a row scored exactly gets its cosine only if its exact BM25
   leaves it a chance.
3. A row sharing no query term scores ``α·cos/(1 + α)``: only when the k-th
   score does not beat ``α·cos_max/(1 + α)`` are the cosine top-k over every
   valid row computed and offered (their BM25 looked up in the lists).

The lexical part of each hit (``bm25/ceiling``) is looked up again in the
lists for the k rows returned, by the same operations in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from sentient_kernels.bm25 import (
    _COS_CEIL,
    _NO_ROWS,
    K1,
    NO_DF,
    B,
    _check_codes,
    _check_query,
    _cosine,
    _fuse,
    _offer,
    _sorted_order,
    warmup_index,
)
from sentient_kernels.bounds import _tf_factor
from sentient_kernels.checks import check_int, check_scalar
from sentient_kernels.config import jit
from sentient_kernels.holographic import topk_cosine
from sentient_kernels.maxscore import (
    _ALL,
    _daat,
    _lower_bound,
    _no_overlay,
    _planned,
    retired_rows,
)
from sentient_kernels.quantized import CompactScan, exact_topk_quantised
from sentient_kernels.segments import Packed, Segment

__all__ = ["hybrid_topk", "hybrid_unchecked"]

# Bit-reproducible against the exhaustive kernels: no fast-math anywhere here.
_jit = jit(fastmath=False)


@_jit
def _row_score(seg, qterms, weight, bm, r):
    """BM25 of row ``r`` (0 if it holds no query term), added in query-term order.

    ``seg`` is (terms, starts, rows, tfs) of the packed segments, ``bm``
    (doc_len, avgdl, k1, b).
    """
    seg_terms, seg_starts, seg_rows, seg_tfs = seg
    doc_len, avgdl, k1, b = bm
    score = 0.0
    for j in range(qterms.size):
        if weight[j] <= 0.0:
            continue
        for s in range(len(seg_terms)):
            terms = seg_terms[s]
            t = np.searchsorted(terms, qterms[j])
            if t >= terms.size or terms[t] != qterms[j]:
                continue
            rows = seg_rows[s]
            p = _lower_bound(rows, seg_starts[s][t], seg_starts[s][t + 1], r)
            if p < seg_starts[s][t + 1] and rows[p] == r:
                tf = np.float64(seg_tfs[s][p])
                score += weight[j] * _tf_factor(tf, doc_len[r], avgdl, k1, b)
                break
    return score


@_jit
def _heap(rows, tfs, block_f, plan, has_mask, valid, doc_len, bm, ceil, alpha, codes, q64, q, kk):
    """Steps 1 and 2 of the module docstring: the hybrid heap (scores, rows) and its fill.

    ``plan`` from :func:`sentient_kernels.maxscore._planned`, ``bm`` (avgdl,
    k1, b), ``q`` (1/|q|, the query in float32, the estimate's error bound).
    """
    avgdl, k1, b = bm
    inv_qnorm, q32, margin = q
    idx = (rows, tfs, block_f)
    lengths = (doc_len, avgdl, k1, b)
    cos = (codes, q64, inv_qnorm, q32, margin)
    bs = np.empty(kk)
    bi = np.empty(kk, dtype=np.int64)
    ov = _no_overlay()
    nb = _daat(
        idx, plan, has_mask, valid, lengths, False, ceil, alpha, cos, ov, _NO_ROWS, bs, bi, 0
    )
    inv_ceil = 1.0 / ceil if ceil > 0.0 else 0.0
    hs = np.empty(kk)
    hidx = np.empty(kk, dtype=np.int64)
    nh = 0
    for t in range(nb):
        r = bi[t]
        c = _cosine(codes, r, q64, inv_qnorm)
        nh = _offer(hs, hidx, nh, kk, _fuse(c, bs[t] * inv_ceil, alpha), r)
    skip = np.sort(bi[:nb])
    nh = _daat(idx, plan, has_mask, valid, lengths, True, ceil, alpha, cos, ov, skip, hs, hidx, nh)
    return hs, hidx, nh


@_jit
def _finish(
    terms,
    starts,
    rows,
    tfs,
    qterms,
    weight,
    doc_len,
    bm,
    ceil,
    alpha,
    codes,
    q64,
    inv_qnorm,
    cand,
    hs,
    hidx,
    nh,
):
    """Step 3: offer the rows of ``cand`` not in the heap; returns (4, fill) sorted best first.

    Rows: row, score, ``bm25/ceil``, cosine.
    """
    seg = (terms, starts, rows, tfs)
    avgdl, k1, b = bm
    lengths = (doc_len, avgdl, k1, b)
    kk = hs.size
    inv_ceil = 1.0 / ceil if ceil > 0.0 else 0.0
    for t in range(cand.size):
        r = cand[t]
        held = False
        for u in range(nh):
            held = held or hidx[u] == r
        if held:
            continue  # a row offered twice would sit in the heap twice
        rel = _row_score(seg, qterms, weight, lengths, r) * inv_ceil
        nh = _offer(hs, hidx, nh, kk, _fuse(_cosine(codes, r, q64, inv_qnorm), rel, alpha), r)
    order = _sorted_order(hs, hidx, nh)
    out = np.empty((4, nh))
    for t in range(nh):
        r = hidx[order[t]]
        out[0, t] = r
        out[1, t] = hs[order[t]]
        out[2, t] = _row_score(seg, qterms, weight, lengths, r) * inv_ceil
        out[3, t] = _cosine(codes, r, q64, inv_qnorm)
    return out


def _cos_inputs(codes: np.ndarray, qcode: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(q64, 1/|q|, margin) for the kernels' cosines and their float32 estimates.

    For any summation order ``|dot32 − dot| <= γ_D |x| |q|``, ``γ_D = D u / (1 − D u)``,
    ``u = 2⁻²⁴`` (:func:`sentient_kernels.holographic._prepare_queries`); rows have
    norm at most ``_COS_CEIL``, so ``2.5 γ_D _COS_CEIL`` bounds the estimate's error
    on the cosine, with room. No estimate (margin −1) where float32 could under-
    or overflow.
    """
    q64 = qcode.astype(np.float64)
    qq = float(np.dot(q64, q64))
    d = codes.shape[1]
    unit = 2.0**-24
    margin = -1.0
    if d * unit < 0.01 and 1e-30 < qq < 1e30:
        margin = 2.5 * (d * unit / (1.0 - d * unit)) * _COS_CEIL
    return q64, 1.0 / math.sqrt(qq), margin


def hybrid_unchecked(
    packed: Packed,
    n: int,
    valid: np.ndarray | None,
    doc_len: np.ndarray,
    n_docs: float,
    avgdl: float,
    terms: np.ndarray,
    weights: np.ndarray,
    k: int,
    codes: np.ndarray,
    qcode: np.ndarray,
    alpha: float,
    k1: float = K1,
    b: float = B,
    compact: CompactScan | None = None,
    df: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact hybrid top-k of rows below ``n`` (unchecked; ``codes`` holds ``n`` unit rows).

    Arguments as :func:`sentient_kernels.maxscore.topk_unchecked`, plus the
    codes, the query code (not all zero), α > 0 and optionally ``compact``, the int8
    copy of ``codes`` for the full scan the rows without a query term may need
    (:func:`sentient_kernels.quantized.exact_topk_quantised`: the same answer). Returns rows, scores,
    ``bm25/ceiling`` and cosine of each row, best first (as
    :func:`sentient_kernels.bm25.finish_hybrid`). ``df``: given document frequencies
    (:func:`sentient_kernels.maxscore.topk_unchecked`).
    """
    has_mask = valid is not None
    mask = valid if has_mask else _ALL
    plan, idf = _planned(
        packed.terms,
        packed.starts,
        packed.rows,
        packed.blocks,
        packed.term_f,
        packed.params,
        terms,
        weights,
        n,
        has_mask,
        mask,
        retired_rows(valid, n),
        (float(n_docs), float(avgdl), float(k1), float(b)),
        NO_DF if df is None else df,
    )
    ceil = float(np.dot(weights, idf))
    n_rows = codes.shape[0]
    kk = min(k, max(1, n_rows))
    bm = (float(avgdl), float(k1), float(b))
    q64, inv_qnorm, margin = _cos_inputs(codes, qcode)
    hs, hidx, nh = _heap(
        packed.rows,
        packed.tfs,
        packed.block_f,
        plan,
        has_mask,
        mask,
        doc_len,
        bm,
        ceil,
        alpha,
        codes,
        q64,
        (inv_qnorm, qcode, margin),
        kk,
    )
    cand = _NO_ROWS
    if n_rows and not (nh == kk and hs[0] > alpha * _COS_CEIL / (1.0 + alpha)):
        # Rows with no query term can still enter by their cosine: a full scan, from the
        # int8 copy when there is one (the same rows and scores: quantized.py).
        mask_rows = valid[:n_rows] if valid is not None else None
        if compact is None:
            cand, _ = topk_cosine(codes, qcode, kk, normalized=True, valid=mask_rows)
        else:
            cand, _ = exact_topk_quantised(
                compact.quantised,
                codes,
                qcode,
                kk,
                normalized=True,
                valid=mask_rows,
                gather=compact.gather,
            )
    out = _finish(
        packed.terms,
        packed.starts,
        packed.rows,
        packed.tfs,
        terms,
        plan[5],
        doc_len,
        bm,
        ceil,
        alpha,
        codes,
        q64,
        inv_qnorm,
        cand,
        hs,
        hidx,
        nh,
    )
    return out[0].astype(np.int64), out[1].copy(), out[2].copy(), out[3].copy()


def hybrid_topk(
    segments: Sequence[Segment] | Packed,
    query_terms: np.ndarray,
    k: int,
    *,
    doc_len: np.ndarray,
    codes: np.ndarray,
    query_code: np.ndarray,
    alpha: float,
    query_weights: np.ndarray | None = None,
    valid: np.ndarray | None = None,
    n_docs: float | None = None,
    avgdl: float | None = None,
    k1: float = K1,
    b: float = B,
    df: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact top-k valid rows by the hybrid; as :func:`sentient_kernels.bm25.hybrid_topk`.

    Same parameters and results, bit for bit (see the module docstring).
    """
    k = check_int("k", k, lo=1)
    alpha = check_scalar("alpha", alpha, lo=0.0, lo_open=True)
    q = _check_query(segments, query_terms, query_weights, doc_len, valid, n_docs, avgdl, k1, b, df)
    codes, qcode = _check_codes(codes, query_code, q.n)
    if q.n == 0:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
    mask = q.valid if q.has_mask else None
    return hybrid_unchecked(
        q.packed,
        q.n,
        mask,
        q.doc_len,
        q.n_docs,
        q.avgdl,
        q.terms,
        q.weights,
        k,
        codes,
        qcode,
        alpha,
        q.k1,
        q.b,
        df=q.df,
    )


def _warmup() -> None:
    seg, doc_len, terms, codes = warmup_index()
    for valid in (None, np.ones(2, dtype=np.uint8)):
        hybrid_topk(
            [seg],
            terms,
            2,
            doc_len=doc_len,
            codes=codes,
            query_code=codes[0],
            alpha=0.5,
            valid=valid,
        )
