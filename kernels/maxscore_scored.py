"""Exact scored hybrid top-k that skips most postings, on :mod:`sentient_kernels.maxscore`.

The score is :mod:`sentient_kernels.scored_hybrid`'s

    w_rel · (bm25/ceiling + α·cos)/(1 + α) + static + w_rec · exp(−max(0, now − t)/τ)

over every valid row; the rows, scores, order and the lexical and cosine parts
of each hit are exactly those of
:func:`sentient_kernels.scored_hybrid.finish_scored_hybrid` after adding every
posting into an accumulator, bit for bit. For ``w_rel > 0`` the score grows
with the BM25 score and with the cosine, and ``static + w_rec·recency`` is at
most ``e_max = static_max + max(0, w_rec)`` (recency is at most 1), so a row
whose BM25 gives ``w_rel·(bm25/ceiling + α·cos_max)/(1 + α) + e_max`` below the
k-th score cannot enter: MaxScore skips its postings
(:func:`sentient_kernels.maxscore._daat` with a scorer overlay). Three steps, as
:mod:`sentient_kernels.maxscore_hybrid`:

1. BM25's own top-k by block-max MaxScore; those rows get their full score
   and fill the heap (a k-th score at once).
2. MaxScore again at the BM25 threshold the k-th score implies; a row scored
   exactly is bounded again by its own static (largest cosine and recency),
   then by its recency and a float32 estimate of its cosine, before its exact
   cosine.
3. Rows sharing no term: when the k-th score does not beat their bound
   ``w_rel·α·cos_max/(1 + α) + e_max``, the streaming overlay scan
   (:func:`sentient_kernels.overlay.topk_scored`, the exhaustive path's very
   call) gives the k best of every valid row and they are offered (their BM25
   looked up in the lists).

Both paths hold the same heap after the rows sharing a term (their top-k),
so they decide step 3 alike and end with the same top-k. Rounding: every
pruning comparison leaves room :func:`sentient_kernels.maxscore._tol` (1e-12
of the magnitudes, far above the float64 error of these few operations).
``w_rel <= 0`` has no such bound (a weaker BM25 may win): the caller uses the
exhaustive path (:func:`sentient_core.memory.lexical.rank_rows` does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

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
from sentient_kernels.checks import check_int, check_scalar
from sentient_kernels.config import jit
from sentient_kernels.maxscore import _daat, _no_overlay, _planned, retired_rows
from sentient_kernels.maxscore_hybrid import _cos_inputs, _row_score
from sentient_kernels.overlay import topk_scored
from sentient_kernels.overlay_q8 import topk_scored_quantised
from sentient_kernels.quantized import CompactScan
from sentient_kernels.scored_hybrid import Overlay, _checked_overlay, _extra
from sentient_kernels.segments import Packed, Segment

__all__ = ["applies", "scored_topk", "scored_unchecked"]

# Bit-reproducible against the exhaustive kernels: no fast-math anywhere here.
_jit = jit(fastmath=False)


@_jit
def _heap(
    rows,
    tfs,
    block_f,
    plan,
    valid,
    doc_len,
    bm,
    ceil,
    alpha,
    codes,
    q64,
    q,
    static,
    last_access,
    sc,
    kk,
):
    """Steps 1 and 2 of the module docstring: the heap (scores, rows) and its fill.

    ``bm`` (avgdl, k1, b), ``q`` (1/|q|, the query in float32, the estimate's
    error bound), ``sc`` (w_rel, e_max, w_rec, now, recency_s). The arrays come
    apart (an entry point: no arrays in tuples).
    """
    avgdl, k1, b = bm
    inv_qnorm, q32, margin = q
    w_rel, e_max, w_rec, now, recency_s = sc
    idx = (rows, tfs, block_f)
    lengths = (doc_len, avgdl, k1, b)
    cos = (codes, q64, inv_qnorm, q32, margin)
    bs = np.empty(kk)
    bi = np.empty(kk, dtype=np.int64)
    plain = _no_overlay()
    nb = _daat(idx, plan, True, valid, lengths, False, ceil, alpha, cos, plain, _NO_ROWS, bs, bi, 0)
    inv_ceil = 1.0 / ceil if ceil > 0.0 else 0.0
    hs = np.empty(kk)
    hidx = np.empty(kk, dtype=np.int64)
    nh = 0
    for t in range(nb):
        r = bi[t]
        c = _cosine(codes, r, q64, inv_qnorm)
        x = _extra(static, last_access, r, w_rec, now, recency_s)
        nh = _offer(hs, hidx, nh, kk, w_rel * _fuse(c, bs[t] * inv_ceil, alpha) + x, r)
    skip = np.sort(bi[:nb])
    ov = (True, w_rel, e_max, w_rec, static, last_access, now, recency_s)
    nh = _daat(idx, plan, True, valid, lengths, True, ceil, alpha, cos, ov, skip, hs, hidx, nh)
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
    static,
    last_access,
    sc,
    cand,
    hs,
    hidx,
    nh,
):
    """Step 3: offer the rows of ``cand`` not in the heap; returns (4, fill) sorted best first.

    Rows: row, score, ``bm25/ceil``, cosine. ``sc`` as :func:`_heap`'s.
    """
    seg = (terms, starts, rows, tfs)
    avgdl, k1, b = bm
    w_rel, _, w_rec, now, recency_s = sc
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
        c = _cosine(codes, r, q64, inv_qnorm)
        x = _extra(static, last_access, r, w_rec, now, recency_s)
        nh = _offer(hs, hidx, nh, kk, w_rel * _fuse(c, rel, alpha) + x, r)
    order = _sorted_order(hs, hidx, nh)
    out = np.empty((4, nh))
    for t in range(nh):
        r = hidx[order[t]]
        out[0, t] = r
        out[1, t] = hs[order[t]]
        out[2, t] = _row_score(seg, qterms, weight, lengths, r) * inv_ceil
        out[3, t] = _cosine(codes, r, q64, inv_qnorm)
    return out


def applies(overlay: Overlay) -> bool:
    """True when the overlay allows pruning (``w_rel > 0`` and a finite ``static_max``)."""
    return float(overlay.w_rel) > 0.0 and math.isfinite(float(overlay.static_max))


def scored_unchecked(
    packed: Packed,
    n: int,
    valid: np.ndarray,
    doc_len: np.ndarray,
    n_docs: float,
    avgdl: float,
    terms: np.ndarray,
    weights: np.ndarray,
    k: int,
    codes: np.ndarray,
    qcode: np.ndarray,
    alpha: float,
    overlay: Overlay,
    k1: float = K1,
    b: float = B,
    compact: CompactScan | None = None,
    df: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact scored hybrid top-k of the valid rows below ``n`` (unchecked).

    Arguments as :func:`sentient_kernels.maxscore_hybrid.hybrid_unchecked`
    (``codes`` holds ``n`` unit rows; ``valid``, uint8, is required: the
    scorer's candidates), plus an :class:`~sentient_kernels.scored_hybrid.Overlay`
    over the same rows for which :func:`applies` holds (``static_max`` at least
    the largest ``static`` of a valid row), and optionally ``compact``, the int8
    copy of ``codes`` (:func:`sentient_kernels.quantized.quantise`) for the full scan
    the rows without a query term may need (the same answer), and ``df``, given
    document frequencies (:func:`sentient_kernels.maxscore.topk_unchecked`). Returns rows, scores,
    ``bm25/ceiling`` and cosine of each row, best first (as
    :func:`sentient_kernels.scored_hybrid.finish_scored_hybrid`).
    """
    mask = valid[:n]
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
        True,
        mask,
        retired_rows(mask, n),
        (float(n_docs), float(avgdl), float(k1), float(b)),
        NO_DF if df is None else df,
    )
    ceil = float(np.dot(weights, idf))
    n_rows = codes.shape[0]
    kk = min(k, max(1, int(np.count_nonzero(mask)))) if n_rows else 1
    bm = (float(avgdl), float(k1), float(b))
    q64, inv_qnorm, margin = _cos_inputs(codes, qcode)
    w_rel, w_rec = float(overlay.w_rel), float(overlay.w_rec)
    e_max = float(overlay.static_max) + max(0.0, w_rec)
    sc = (w_rel, e_max, w_rec, float(overlay.now), float(overlay.recency_s))
    static, last_access = overlay.static, overlay.last_access
    hs, hidx, nh = _heap(
        packed.rows,
        packed.tfs,
        packed.block_f,
        plan,
        mask,
        doc_len,
        bm,
        ceil,
        alpha,
        codes,
        q64,
        (inv_qnorm, qcode, margin),
        static,
        last_access,
        sc,
        kk,
    )
    # The exhaustive path's very test and call (finish_scored_hybrid, w_rel > 0).
    no_term_bound = w_rel * alpha * _COS_CEIL / (1.0 + alpha) + overlay.static_max
    no_term_bound += max(0.0, w_rec)
    cand = _NO_ROWS
    if n_rows and not (nh == kk and hs[0] > no_term_bound):
        # Rows with no query term can still enter by their cosine: a full scan, from the
        # int8 copy when there is one (the same rows: overlay_q8).
        scan = (
            topk_scored
            if compact is None
            else partial(topk_scored_quantised, compact.quantised, gather=compact.gather)
        )
        cand, _ = scan(
            codes,
            qcode,
            kk,
            valid=mask,
            static=static,
            last_access=last_access,
            w_cos=w_rel * alpha / (1.0 + alpha),
            w_rec=w_rec,
            now=overlay.now,
            recency_s=overlay.recency_s,
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
        static,
        last_access,
        sc,
        cand,
        hs,
        hidx,
        nh,
    )
    return out[0].astype(np.int64), out[1].copy(), out[2].copy(), out[3].copy()


def scored_topk(
    segments: Sequence[Segment] | Packed,
    query_terms: np.ndarray,
    k: int,
    *,
    doc_len: np.ndarray,
    codes: np.ndarray,
    query_code: np.ndarray,
    alpha: float,
    static: np.ndarray,
    last_access: np.ndarray,
    w_rel: float,
    w_rec: float,
    now: float,
    recency_s: float = 86400.0,
    query_weights: np.ndarray | None = None,
    valid: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact top-k valid rows by the scored hybrid, skipping what cannot reach it.

    Same parameters and results, bit for bit, as
    :func:`sentient_kernels.scored_hybrid.scored_hybrid_topk`; ``w_rel`` must be > 0
    (see the module docstring).
    """
    k = check_int("k", k, lo=1)
    alpha = check_scalar("alpha", alpha, lo=0.0, lo_open=True)
    w_rel = check_scalar("w_rel", w_rel, lo=0.0, lo_open=True)
    q = _check_query(segments, query_terms, query_weights, doc_len, valid, None, None, K1, B)
    codes, qcode = _check_codes(codes, query_code, q.n)
    mask, overlay = _checked_overlay(q, static, last_access, w_rel, w_rec, now, recency_s)
    if overlay is None:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
    return scored_unchecked(
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
        overlay,
        q.k1,
        q.b,
    )


def _warmup() -> None:
    seg, doc_len, terms, codes = warmup_index()
    scored_topk(
        [seg],
        terms,
        2,
        doc_len=doc_len,
        codes=codes,
        query_code=codes[0],
        alpha=0.5,
        static=np.zeros(2),
        last_access=np.zeros(2),
        w_rel=1.0,
        w_rec=0.2,
        now=0.0,
    )
