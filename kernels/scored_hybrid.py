"""The learned scorer's overlay inside the hybrid (BM25 + cosine) top-k: scored recall.

Score of a row (the recall scorer's Σ w_k f_k with the hybrid as its relevance)::

    score = w_rel · (bm25/ceiling + α·cos)/(1 + α) + static + w_rec · exp(−max(0, now − t)/τ)

``static`` holds the weighted factors that depend neither on the query nor on the
clock, one float per row; ``t`` is the row's last access. Every term of the
score is computed in the same pass that finds the top-k, never as a second pass
over a first ranking:

1. the rows sharing a query term (the BM25 accumulator's touched rows) get their
   full score, except those whose bound — their BM25, the largest cosine a unit
   code can have, their own static and recency — cannot reach the current k-th;
2. a row sharing no term scores at most ``w_rel·α·cos_max/(1+α) + max(static) +
   max(0, w_rec)``; only when the k-th score found does not beat that bound does
   the streaming overlay scan (:func:`sentient_kernels.overlay.topk_scored`, the
   overlay computed inside the cosine scan) run over every valid row with
   ``w_cos = w_rel·α/(1+α)``, and its rows are offered with their full score.

The result is exact either way (for ``w_rel ≥ 0`` a touched row's full score is
at least its no-term score; for ``w_rel < 0`` the scan returns ``k`` + touched
rows, so ``k`` untouched ones are among them). Ties go to the lower row. The
reference is ``tests/naive_overlay.py::scored_hybrid``. This is the exhaustive
path (every posting accumulated); for ``w_rel > 0`` the memory ranks with
:mod:`sentient_kernels.maxscore_scored`, the same result on block-max MaxScore.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from sentient_kernels.bm25 import (
    _COS_CEIL,
    _NO_ROWS,
    K1,
    B,
    _best_touched,
    _check_codes,
    _check_query,
    _cosine,
    _fuse,
    _hybrid_output,
    _offer,
    _Query,
    _run,
    ceiling,
    warmup_index,
)
from sentient_kernels.checks import check_array, check_int, check_scalar
from sentient_kernels.config import jit
from sentient_kernels.overlay import topk_scored
from sentient_kernels.segments import Packed, Segment

__all__ = ["Overlay", "finish_scored_hybrid", "scored_hybrid_topk"]

_jit = jit(fastmath=False)


class Overlay(NamedTuple):
    """The scorer's part of a row's score (see the module docstring).

    Attributes
    ----------
    static : (n,) float64
        Weighted query- and clock-independent factors of each row.
    last_access : (n,) float64
        Unix seconds.
    w_rel, w_rec : float
        Weights of the relevance (the hybrid score) and of the recency.
    now, recency_s : float
        The clock, and the recency time constant τ in seconds.
    static_max : float
        ``max(static)`` over the valid rows (the no-term bound), -inf when none.
    """

    static: np.ndarray
    last_access: np.ndarray
    w_rel: float
    w_rec: float
    now: float
    recency_s: float
    static_max: float


@_jit
def _extra(static, last_access, r, w_rec, now, recency_s):
    age = now - last_access[r]
    if age < 0.0:
        age = 0.0
    return static[r] + w_rec * math.exp(-age / recency_s)


@_jit
def _scored_touched(
    acc, touched, nt, inv_ceil, codes, q64, inv_qnorm, alpha, ov, w_rel, static_max, seen, hs, hi
):
    """Full scores of the touched rows that may enter the heap; returns its fill.

    As :func:`sentient_kernels.bm25._hybrid_touched`: the k best touched rows by BM25 are
    scored first (a strong k-th score), then every other touched row only if its
    bound (the largest cosine a unit code can have, recency 1) reaches the heap's
    worst. ``ov`` is (static, last_access, w_rec, now, recency_s).
    """
    static, last_access, w_rec, now, recency_s = ov
    kk = hs.size
    div = 1.0 + alpha
    n = 0
    bs = np.empty(kk)
    bi = np.empty(kk, dtype=np.int64)
    # As the plain hybrid: BM25 alone orders this heuristic first pass.
    nb = _best_touched(acc, touched, nt, kk, bs, bi, False)
    for t in range(nb):
        r = bi[t]
        seen[r] = 1
        c = _cosine(codes, r, q64, inv_qnorm)
        x = _extra(static, last_access, r, w_rec, now, recency_s)
        n = _offer(hs, hi, n, kk, w_rel * _fuse(c, acc[r] * inv_ceil, alpha) + x, r)
    prune = w_rel >= 0.0
    rec_bound = max(0.0, w_rec)  # recency is at most 1: no exp for a row that loses anyway
    for t in range(nt):
        r = touched[t]
        if seen[r] != 0:
            continue
        rel = acc[r] * inv_ceil
        if prune and n == kk:
            # Even with the largest cosine and recency a row can have, it loses: first
            # against the largest static of any row (no read of this row's), then its own.
            lexical = w_rel * (rel + alpha * _COS_CEIL) / div + rec_bound
            if lexical + static_max < hs[0] or lexical + static[r] < hs[0]:
                continue
        seen[r] = 1
        c = _cosine(codes, r, q64, inv_qnorm)
        x = _extra(static, last_access, r, w_rec, now, recency_s)
        n = _offer(hs, hi, n, kk, w_rel * _fuse(c, rel, alpha) + x, r)
    return n


@_jit
def _scored_candidates(
    acc, inv_ceil, codes, q64, inv_qnorm, alpha, ov, w_rel, cand, seen, hs, hi, n
):
    """Offer the unseen rows of ``cand`` with their full score; returns the heap's fill."""
    static, last_access, w_rec, now, recency_s = ov
    kk = hs.size
    for t in range(cand.size):
        r = cand[t]
        if seen[r] == 0:
            seen[r] = 1
            c = _cosine(codes, r, q64, inv_qnorm)
            x = _extra(static, last_access, r, w_rec, now, recency_s)
            n = _offer(hs, hi, n, kk, w_rel * _fuse(c, acc[r] * inv_ceil, alpha) + x, r)
    return n


def finish_scored_hybrid(acc, touched, nt, ceil, codes, qcode, alpha, k, valid, overlay, seen=None):
    """The scored selection after BM25's accumulation (unchecked; for the memory's recall).

    Arguments as :func:`sentient_kernels.bm25.finish_hybrid`, plus ``overlay`` (an
    :class:`Overlay` over the same rows as ``codes``). ``valid`` (uint8) is
    required: it is the overlay scan's candidate mask. Returns rows, scores,
    the normalised BM25 and the cosine of each row, best first.
    """
    n_rows = codes.shape[0]
    kk = min(k, max(1, int(np.count_nonzero(valid)) if n_rows else 1))
    hs = np.empty(kk)
    hi = np.empty(kk, dtype=np.int64)
    q64 = qcode.astype(np.float64)
    inv_qnorm = 1.0 / math.sqrt(float(np.dot(q64, q64)))
    if seen is None:
        seen = np.zeros(acc.shape[0], dtype=np.uint8)
    inv_ceil = 1.0 / ceil if ceil > 0.0 else 0.0
    w_rel = float(overlay.w_rel)
    ov = (
        overlay.static,
        overlay.last_access,
        float(overlay.w_rec),
        float(overlay.now),
        float(overlay.recency_s),
    )
    n = _scored_touched(
        acc,
        touched,
        nt,
        inv_ceil,
        codes,
        q64,
        inv_qnorm,
        alpha,
        ov,
        w_rel,
        float(overlay.static_max),
        seen,
        hs,
        hi,
    )
    div = 1.0 + alpha
    cos_bound = _COS_CEIL if w_rel >= 0.0 else -_COS_CEIL
    no_term_bound = w_rel * alpha * cos_bound / div + overlay.static_max + max(0.0, overlay.w_rec)
    cand = _NO_ROWS
    if n_rows and not (n == kk and hs[0] > no_term_bound):
        want = kk if w_rel >= 0.0 else kk + nt
        cand, _ = topk_scored(
            codes,
            qcode,
            want,
            valid=valid,
            static=overlay.static,
            last_access=overlay.last_access,
            w_cos=w_rel * alpha / div,
            w_rec=overlay.w_rec,
            now=overlay.now,
            recency_s=overlay.recency_s,
        )
        n = _scored_candidates(
            acc, inv_ceil, codes, q64, inv_qnorm, alpha, ov, w_rel, cand, seen, hs, hi, n
        )
    out = np.empty((4, n))
    _hybrid_output(acc, touched, nt, cand, inv_ceil, codes, q64, inv_qnorm, seen, hs, hi, n, out)
    return out[0].astype(np.int64), out[1].copy(), out[2].copy(), out[3].copy()


def _checked_overlay(
    q: _Query,
    static: object,
    last_access: object,
    w_rel: float,
    w_rec: float,
    now: float,
    recency_s: float,
) -> tuple[np.ndarray, Overlay | None]:
    """The scored wrappers' overlay arguments, checked: the valid-row mask and the
    :class:`Overlay` (None when no row is valid: an empty result)."""
    static = check_array("static", static, dtype=np.float64, shape=(q.n,))
    last_access = check_array("last_access", last_access, dtype=np.float64, shape=(q.n,))
    for name, x in (("w_rel", w_rel), ("w_rec", w_rec), ("now", now), ("recency_s", recency_s)):
        check_scalar(name, x)
    if recency_s <= 0:
        raise ValueError(f"recency_s must be > 0, got {recency_s}")
    mask = q.valid if q.has_mask else np.ones(q.n, dtype=np.uint8)
    if q.n == 0 or not mask.any():
        return mask, None
    static_max = float(static[mask.astype(bool)].max())
    return mask, Overlay(
        static, last_access, float(w_rel), float(w_rec), float(now), float(recency_s), static_max
    )


def scored_hybrid_topk(
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
    """Exact top-k valid rows by the scored hybrid (see the module docstring).

    Parameters
    ----------
    segments, query_terms, k, doc_len, query_weights, valid
        As in :func:`sentient_kernels.bm25.topk`.
    codes, query_code, alpha
        As in :func:`sentient_kernels.bm25.hybrid_topk` (unit codes, a non-zero query code).
    static, last_access : (n,) float64
        Finite; see :class:`Overlay`.
    w_rel, w_rec, now, recency_s : float
        Finite; ``recency_s > 0``.

    Returns
    -------
    rows : (k',) int64
        Best first, ties to the lower row; ``k' = min(k, valid rows)``.
    scores : (k',) float64
    lexical : (k',) float64
        ``bm25 / ceiling`` of each row.
    cosine : (k',) float64
    """
    k = check_int("k", k, lo=1)
    alpha = check_scalar("alpha", alpha, lo=0.0, lo_open=True)
    q = _check_query(segments, query_terms, query_weights, doc_len, valid, None, None, K1, B)
    codes, qcode = _check_codes(codes, query_code, q.n)
    mask, overlay = _checked_overlay(q, static, last_access, w_rel, w_rec, now, recency_s)
    if overlay is None:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
    acc = np.zeros(q.n)
    touched = np.empty(q.n, dtype=np.int64)
    nt, idf = _run(q, acc, touched)
    return finish_scored_hybrid(
        acc, touched, nt, ceiling(idf, q.weights), codes, qcode, alpha, k, mask, overlay
    )


def _warmup() -> None:
    seg, doc_len, terms, codes = warmup_index()
    scored_hybrid_topk(
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
