"""Exact BM25 top-k over posting segments, and a BM25 + cosine hybrid.

Scoring (Lucene's BM25, as bm25s's default ``method="lucene"``)::

    idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
    bm25(q, d)  = Σ_{t ∈ q} w_t · idf(t) · tf / (tf + k1 · (1 − b + b · (dl / avgdl)))

``N`` is the number of documents (valid rows), ``df(t)`` the valid rows
below ``n`` holding ``t`` (counted exactly from the postings at query time, so
rows masked out by ``valid`` never count), ``tf`` the term's frequency in the
row, ``dl`` the row's length in tokens and ``avgdl`` the mean length over the
valid rows; ``w_t`` is the query weight of ``t`` (its count in the query, as
bm25s sums a repeated query token once per occurrence). Defaults ``k1 = 1.2``,
``b = 0.75``.

The **ceiling** of a query is ``Σ_t w_t · idf(t)`` over the query terms some
row holds (a term no row holds can raise no score; its idf is reported as 0),
an upper bound of every
document's score (each tf factor is at most 1, below 1 when ``k1 > 0``).
``bm25 / ceiling``, in [0, 1], is the normalised score the memory reports:
the idf-weighted share of the query a document covers, discounted by tf
saturation and length.

The **hybrid** score of a row mixes its normalised BM25 with its cosine::

    hybrid = (bm25 / ceiling + α · cos) / (1 + α),    α > 0

``cos`` being the cosine of the row's unit code with the query code; it is
in [−α/(1+α), 1] and every valid row is a candidate (a row sharing no query
term scores ``α·cos/(1+α)``).

Exactness and determinism: every BM25 score is computed in float64 without
fast-math, in query-term order, so it is bit-identical to the reference in
``tests/naive_bm25.py``; ties go to the lower row. The hybrid top-k is exact
too: it lies among the top-k rows by cosine (for rows sharing no term the
hybrid is the cosine) and the rows sharing a term, and of the latter only
those whose bound (their BM25 with the k-th cosine) can still reach the
current k-th score get their cosine computed.

**Given statistics** (a shard of a larger corpus): ``n_docs``, ``avgdl`` and
``df`` (each query term's document frequency, :func:`sentient_kernels.doc_freqs.doc_freqs`
summed over the parts) replace what the kernels would count over these rows;
with the whole corpus's values, every score equals the whole index's, bit for
bit (the same float operations on the same inputs), so per-part top-k merged by
(score desc, row) are the whole's top-k (``tests/test_bm25_df.py``).

These kernels add every posting of every query term into an accumulator;
:mod:`sentient_kernels.maxscore` and :mod:`sentient_kernels.maxscore_hybrid`
give the same top-k, bit for bit, skipping the postings that cannot reach it
(the memory's BM25 and hybrid ranks use them).

Segments are :class:`sentient_kernels.segments.Segment`; a list of them is handed to
the kernels as Numba typed lists (:func:`sentient_kernels.segments.pack`), which a
caller that queries one index many times builds once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from sentient_kernels.bounds import pack_with_bounds
from sentient_kernels.checks import check_array, check_int, check_scalar
from sentient_kernels.config import jit
from sentient_kernels.holographic import _heap_push, _heap_replace_root, _worse, topk_cosine
from sentient_kernels.segments import Packed, Segment

__all__ = ["COS_CEIL", "K1", "B", "ceiling", "hybrid_topk", "scores", "topk", "warmup_index"]

K1 = 1.2
B = 0.75

# Bit-reproducible against the reference: no fast-math anywhere here.
_jit = jit(fastmath=False)

# Cosines of unit float32 rows can exceed 1 by rounding; the pruning bound allows for it.
_COS_CEIL = 1.0 + 1e-6
COS_CEIL = _COS_CEIL
"""The largest cosine of two unit float32 rows the pruning bounds allow for (rounding)."""

# --------------------------------------------------------------------- kernels


@_jit
def _idf(n_docs, df):
    n_eff = max(n_docs, df)  # a stale N below df would make the log argument negative
    return math.log(1.0 + (n_eff - df + 0.5) / (df + 0.5))


@_jit
def _accumulate(
    seg_terms,
    seg_starts,
    seg_rows,
    seg_tfs,
    qterms,
    qweights,
    n,
    has_mask,
    valid,
    doc_len,
    n_docs,
    avgdl,
    k1,
    b,
    acc,
    touched,
    idf_out,
):
    """Add every query term's BM25 contribution to ``acc[row]``; returns how many rows it touched.

    ``acc`` (>= n,) must be zero on entry; the touched rows are listed in
    ``touched`` in first-touch order. Postings of rows >= n or masked out are
    skipped. ``idf_out[j]`` receives the idf of query term ``j`` (0 when no row holds it).
    """
    return _accumulate_df(
        seg_terms,
        seg_starts,
        seg_rows,
        seg_tfs,
        qterms,
        qweights,
        n,
        has_mask,
        valid,
        doc_len,
        n_docs,
        avgdl,
        k1,
        b,
        acc,
        touched,
        idf_out,
        np.zeros(0, dtype=np.int64),
    )


@_jit
def _accumulate_df(
    seg_terms,
    seg_starts,
    seg_rows,
    seg_tfs,
    qterms,
    qweights,
    n,
    has_mask,
    valid,
    doc_len,
    n_docs,
    avgdl,
    k1,
    b,
    acc,
    touched,
    idf_out,
    df_given,
):
    """:func:`_accumulate`, with each query term's document frequency given (``df_given``,
    int64, one per query term) instead of counted here when ``df_given`` is not empty:
    the corpus statistics of a larger corpus this index is a part of (a shard)."""
    nq = qterms.size
    given = df_given.size > 0
    ns = len(seg_terms)
    lo = np.zeros((nq, ns), dtype=np.int64)
    hi = np.zeros((nq, ns), dtype=np.int64)
    for j in range(nq):
        df = 0
        for s in range(ns):
            terms = seg_terms[s]
            pos = np.searchsorted(terms, qterms[j])
            if pos < terms.size and terms[pos] == qterms[j]:
                a = seg_starts[s][pos]
                z = seg_starts[s][pos + 1]
                lo[j, s] = a
                hi[j, s] = z
                if given:
                    continue
                rows = seg_rows[s]
                for p in range(a, z):
                    r = rows[p]
                    if r >= n:
                        break
                    if has_mask and valid[r] == 0:
                        continue
                    df += 1
        if given:
            df = df_given[j]
        # A term no row holds scores nothing and leaves the ceiling (idf 0).
        idf_out[j] = _idf(n_docs, df) if df > 0 else 0.0
    nt = 0
    for j in range(nq):
        weight = qweights[j] * idf_out[j]
        for s in range(ns):
            rows = seg_rows[s]
            tfs = seg_tfs[s]
            for p in range(lo[j, s], hi[j, s]):
                r = rows[p]
                if r >= n:
                    break
                if has_mask and valid[r] == 0:
                    continue
                tf = np.float64(tfs[p])
                ratio = np.float64(doc_len[r]) / avgdl if avgdl > 0.0 else 1.0
                c = weight * (tf / (tf + k1 * (1.0 - b + b * ratio)))
                if acc[r] == 0.0:
                    touched[nt] = r
                    nt += 1
                acc[r] += c
    return nt


@_jit
def _offer(hs, hi, n, k, s, i):
    """Offer (s, i) to a min-heap (root = worst) of capacity k holding n; returns the new n."""
    if n < k:
        _heap_push(hs, hi, n, s, i)
        return n + 1
    if _worse(hs[0], hi[0], s, i):
        _heap_replace_root(hs, hi, n, s, i)
    return n


@_jit
def _sorted_order(hs, hi, n):
    """Positions of the heap entries ordered best first (score desc, row asc)."""
    by_row = np.argsort(hi[:n])
    neg = np.empty(n)
    for t in range(n):
        neg[t] = -hs[by_row[t]]
    by_score = np.argsort(neg, kind="mergesort")
    out = np.empty(n, dtype=np.int64)
    for t in range(n):
        out[t] = by_row[by_score[t]]
    return out


@_jit
def _best_touched(acc, touched, nt, kk, hs, hi, reset):
    """The ``kk`` best of the ``nt`` touched rows by ``acc`` into the heap ``hs``/``hi``.

    Ties go to the lower row. Returns the heap's fill. With ``reset``, zeroes
    ``acc`` of every touched row in the same pass (:func:`_select`'s cleanup).
    """
    n = 0
    # Once the heap is full, most rows lose to its root: test that inline first.
    root_s = -np.inf
    root_i = -1
    for t in range(nt):
        r = touched[t]
        s = acc[r]
        if reset:
            acc[r] = 0.0
        if n == kk and (s < root_s or (s == root_s and r > root_i)):
            continue
        n = _offer(hs, hi, n, kk, s, r)
        if n == kk:
            root_s = hs[0]
            root_i = hi[0]
    return n


@_jit
def _select(acc, touched, nt, k, out_rows, out_scores):
    """Top-k touched rows by ``acc`` into ``out_*``; resets ``acc`` to zero; returns the count."""
    kk = min(k, nt)
    hs = np.empty(max(kk, 1))
    hi = np.empty(max(kk, 1), dtype=np.int64)
    n = _best_touched(acc, touched, nt, kk, hs, hi, True)
    order = _sorted_order(hs, hi, n)
    for t in range(n):
        out_rows[t] = hi[order[t]]
        out_scores[t] = hs[order[t]]
    return n


@_jit
def _cosine(codes, r, q64, inv_qnorm):
    acc = 0.0
    row = codes[r]
    for j in range(row.shape[0]):
        acc += np.float64(row[j]) * q64[j]
    return acc * inv_qnorm


@_jit
def _fuse(cos, rel, alpha):
    return (rel + alpha * cos) / (1.0 + alpha)


@_jit
def _hybrid_touched(acc, touched, nt, inv_ceil, codes, q64, inv_qnorm, alpha, seen, hs, hi):
    """Exact top-k of the touched rows by ``(acc/ceil + α·cos)/(1 + α)`` into the heap ``hs``/``hi``.

    The k best rows by BM25 alone are scored first (a strong k-th score);
    every other touched row gets its cosine computed only if its bound
    ``(acc/ceil + α·_COS_CEIL)/(1 + α)`` reaches the heap's worst. Scored
    rows are marked in ``seen``. Returns the heap's fill.
    """
    kk = hs.size
    n = 0
    bs = np.empty(kk)
    bi = np.empty(kk, dtype=np.int64)
    nb = _best_touched(acc, touched, nt, kk, bs, bi, False)  # the k best by BM25 alone
    for t in range(nb):
        r = bi[t]
        seen[r] = 1
        c = _cosine(codes, r, q64, inv_qnorm)
        n = _offer(hs, hi, n, kk, _fuse(c, acc[r] * inv_ceil, alpha), r)
    bound_add = alpha * _COS_CEIL
    div = 1.0 + alpha
    for t in range(nt):
        r = touched[t]
        if seen[r] != 0:
            continue
        rel = acc[r] * inv_ceil
        if n == kk and (rel + bound_add) / div < hs[0]:
            continue  # even with the largest cosine a code can have, it loses
        seen[r] = 1
        c = _cosine(codes, r, q64, inv_qnorm)
        n = _offer(hs, hi, n, kk, _fuse(c, rel, alpha), r)
    return n


@_jit
def _hybrid_candidates(acc, inv_ceil, codes, q64, inv_qnorm, alpha, cand, seen, hs, hi, n):
    """Offer the unseen rows of ``cand`` (the top-k by cosine) to the heap; returns its fill."""
    kk = hs.size
    for t in range(cand.size):
        r = cand[t]
        if seen[r] == 0:
            seen[r] = 1
            c = _cosine(codes, r, q64, inv_qnorm)
            n = _offer(hs, hi, n, kk, _fuse(c, acc[r] * inv_ceil, alpha), r)
    return n


@_jit
def _hybrid_output(acc, touched, nt, cand, inv_ceil, codes, q64, inv_qnorm, seen, hs, hi, n, out):
    """Sorted heap into ``out`` (rows, scores, lexical, cosine); resets ``acc`` and ``seen``."""
    order = _sorted_order(hs, hi, n)
    for t in range(n):
        r = hi[order[t]]
        out[0, t] = r
        out[1, t] = hs[order[t]]
        out[2, t] = acc[r] * inv_ceil
        out[3, t] = _cosine(codes, r, q64, inv_qnorm)
    for t in range(nt):
        r = touched[t]
        acc[r] = 0.0
        seen[r] = 0
    for t in range(cand.size):
        seen[cand[t]] = 0


@_jit
def _dense(acc, touched, nt, out):
    """Copy the touched scores into ``out`` (zero elsewhere) and reset ``acc``."""
    for t in range(nt):
        r = touched[t]
        out[r] = acc[r]
        acc[r] = 0.0


# --------------------------------------------------------------------- wrappers


class _Query(NamedTuple):
    packed: Packed
    terms: np.ndarray
    weights: np.ndarray
    n: int
    has_mask: bool
    valid: np.ndarray
    doc_len: np.ndarray
    n_docs: float
    avgdl: float
    k1: float
    b: float
    df: np.ndarray  # given document frequencies (int64), empty: counted from the index


NO_DF = np.zeros(0, dtype=np.int64)
"""The ``df`` argument of the unchecked kernels meaning "count them from the index"."""


def _check_query(
    segments, query_terms, query_weights, doc_len, valid, n_docs, avgdl, k1, b, df=None
) -> _Query:
    doc_len = check_array("doc_len", doc_len, dtype=np.int32, ndim=1)
    n = doc_len.shape[0]
    if doc_len.size and doc_len.min() < 0:
        raise ValueError("doc_len must be >= 0")
    terms = check_array("query_terms", query_terms, dtype=np.uint64, ndim=1)
    if query_weights is None:
        weights = np.ones(terms.shape[0])
    else:
        weights = check_array(
            "query_weights", query_weights, dtype=np.float64, shape=(terms.shape[0],)
        )
        if weights.size and weights.min() <= 0.0:
            raise ValueError("query_weights must be > 0")
    if np.unique(terms).size != terms.size:
        raise ValueError("query_terms must be distinct (give repeats as query_weights)")
    if valid is None:
        has_mask, mask = False, np.ones(1, dtype=np.uint8)
        live = doc_len
    else:
        if isinstance(valid, np.ndarray) and valid.dtype == np.bool_:
            valid = check_array("valid", valid, dtype=np.bool_, shape=(n,)).view(np.uint8)
        mask = check_array("valid", valid, dtype=np.uint8, shape=(n,))
        has_mask = True
        live = doc_len[mask != 0]
    if n_docs is None:
        n_docs = live.size
    n_docs = check_scalar("n_docs", n_docs, lo=0.0)
    if avgdl is None:
        avgdl = float(live.mean()) if live.size else 0.0
    avgdl = check_scalar("avgdl", avgdl, lo=0.0)
    k1 = check_scalar("k1", k1, lo=0.0)
    b = check_scalar("b", b, lo=0.0, hi=1.0)
    if df is None:
        df = NO_DF
    else:
        df = check_array("df", df, dtype=np.int64, shape=(terms.shape[0],))
        if df.size and df.min() < 0:
            raise ValueError("df must be >= 0")
    if isinstance(segments, Packed):
        packed = segments
    else:
        packed = pack_with_bounds(segments, doc_len, k1, b)
    return _Query(packed, terms, weights, n, has_mask, mask, doc_len, n_docs, avgdl, k1, b, df)


def _run(q: _Query, acc: np.ndarray, touched: np.ndarray) -> tuple[int, np.ndarray]:
    idf = np.empty(q.terms.shape[0])
    nt = _accumulate_df(
        q.packed.terms,
        q.packed.starts,
        q.packed.rows,
        q.packed.tfs,
        q.terms,
        q.weights,
        q.n,
        q.has_mask,
        q.valid,
        q.doc_len,
        q.n_docs,
        q.avgdl,
        q.k1,
        q.b,
        acc,
        touched,
        idf,
        q.df,
    )
    return nt, idf


def scores(
    segments: Sequence[Segment] | Packed,
    query_terms: np.ndarray,
    *,
    doc_len: np.ndarray,
    query_weights: np.ndarray | None = None,
    valid: np.ndarray | None = None,
    n_docs: float | None = None,
    avgdl: float | None = None,
    k1: float = K1,
    b: float = B,
    df: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """BM25 score of every row for one query.

    Parameters
    ----------
    segments : sequence of Segment, or Packed
        The index; rows at or above ``len(doc_len)`` are ignored.
    query_terms : (Q,) uint64
        Distinct term hashes of the query.
    doc_len : (n,) int32
        Length in tokens of every row ``0..n-1``.
    query_weights : (Q,) float64, optional
        Weight of each query term (> 0); default 1 (bm25s: the term's count in the query).
    valid : (n,) bool or uint8, optional
        Rows with ``valid == 0`` are excluded (score 0, not counted in df, N or avgdl).
    n_docs, avgdl : float, optional
        ``N`` and the mean length; default: computed over the valid rows.
    k1, b : float
        BM25 parameters (``k1 >= 0``, ``0 <= b <= 1``).
    df : (Q,) int64, optional
        Each query term's document frequency, used instead of counting it here:
        with ``n_docs`` and ``avgdl``, the statistics of a larger corpus these rows
        are part of (a shard's rows score as in the whole corpus). A term with
        ``df == 0`` has idf 0.

    Returns
    -------
    scores : (n,) float64
        0 for rows sharing no query term.
    idf : (Q,) float64
        The idf of each query term.
    """
    q = _check_query(segments, query_terms, query_weights, doc_len, valid, n_docs, avgdl, k1, b, df)
    acc = np.zeros(q.n)
    touched = np.empty(q.n, dtype=np.int64)
    nt, idf = _run(q, acc, touched)
    out = np.zeros(q.n)
    _dense(acc, touched, nt, out)
    return out, idf


def ceiling(idf: np.ndarray, weights: np.ndarray) -> float:
    """``Σ w_t · idf(t)``: the bound every BM25 score of the query stays below."""
    return float(np.dot(weights, idf))


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
    """Exact top-k rows by BM25 (see :func:`scores` for the parameters).

    Returns
    -------
    rows : (k',) int64
        Best first, ties to the lower row; only rows sharing a query term
        (``k' <= k``).
    scores : (k',) float64
        Their BM25 scores.
    ceiling : float
        ``Σ w_t · idf(t)`` (divide by it for the normalised score in [0, 1]).
    """
    k = check_int("k", k, lo=1)
    q = _check_query(segments, query_terms, query_weights, doc_len, valid, n_docs, avgdl, k1, b, df)
    acc = np.zeros(q.n)
    touched = np.empty(q.n, dtype=np.int64)
    nt, idf = _run(q, acc, touched)
    rows = np.empty(min(k, nt), dtype=np.int64)
    out = np.empty(min(k, nt))
    _select(acc, touched, nt, k, rows, out)
    return rows, out, ceiling(idf, q.weights)


def _check_codes(codes: object, query_code: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The hybrids' code arguments: (n, d) unit float32 rows and a non-zero (d,) query."""
    codes = check_array("codes", codes, dtype=np.float32, shape=(n, None))
    qcode = check_array("query_code", query_code, dtype=np.float32, shape=(codes.shape[1],))
    if not qcode.any():
        raise ValueError("query_code must not be all zeros (its cosine is undefined)")
    norms = np.sqrt(np.einsum("ij,ij->i", codes, codes, dtype=np.float64))
    if norms.size and not norms.max() <= _COS_CEIL:  # the pruning bound relies on it
        raise ValueError(f"codes rows must have norm <= 1 (unit codes), got {norms.max()}")
    return codes, qcode


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
    """Exact top-k valid rows by ``(bm25/ceiling + α·cos)/(1 + α)``.

    Parameters
    ----------
    codes : (n, D) float32
        Row codes of norm at most 1 (unit codes, or zero; checked to 1e-6).
    query_code : (D,) float32
        Not all zero.
    alpha : float
        Weight of the cosine (> 0; with 0 the cosine could not order the
        rows sharing no query term).
    segments, query_terms, k, doc_len, query_weights, valid, n_docs, avgdl, k1, b, df
        As in :func:`topk`.

    Returns
    -------
    rows : (k',) int64
        Best first, ties to the lower row; ``k' = min(k, valid rows)``.
    scores : (k',) float64
        Hybrid scores, in [−α/(1+α), 1].
    lexical : (k',) float64
        ``bm25 / ceiling`` of each row, in [0, 1].
    cosine : (k',) float64
        Cosine of each row's code with the query code.
    """
    k = check_int("k", k, lo=1)
    alpha = check_scalar("alpha", alpha, lo=0.0, lo_open=True)
    q = _check_query(segments, query_terms, query_weights, doc_len, valid, n_docs, avgdl, k1, b, df)
    codes, qcode = _check_codes(codes, query_code, q.n)
    acc = np.zeros(q.n)
    touched = np.empty(q.n, dtype=np.int64)
    nt, idf = _run(q, acc, touched)
    if q.n == 0:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
    ceil = ceiling(idf, q.weights)
    return finish_hybrid(
        acc, touched, nt, ceil, codes, qcode, alpha, k, q.valid if q.has_mask else None
    )


def finish_hybrid(acc, touched, nt, ceil, codes, qcode, alpha, k, valid, seen=None):
    """The hybrid selection after :func:`_accumulate` (unchecked; for the memory's recall).

    First the exact top-k among the touched rows (those sharing a query
    term). A row sharing no term scores ``α·cos/(1 + α) <= α/(1 + α)``; only
    when the k-th score found does not beat that is the cosine top-k over all
    valid rows of ``codes`` (``valid``: uint8 mask or None) computed and its
    rows offered too: every other row has a cosine below the k-th one, so the
    result is exact either way.
    """
    n_rows = codes.shape[0]
    kk = min(k, max(1, n_rows))
    hs = np.empty(kk)
    hi = np.empty(kk, dtype=np.int64)
    q64 = qcode.astype(np.float64)
    inv_qnorm = 1.0 / math.sqrt(float(np.dot(q64, q64)))
    if seen is None:
        seen = np.zeros(acc.shape[0], dtype=np.uint8)
    inv_ceil = 1.0 / ceil if ceil > 0.0 else 0.0
    n = _hybrid_touched(acc, touched, nt, inv_ceil, codes, q64, inv_qnorm, alpha, seen, hs, hi)
    cand = _NO_ROWS
    if n_rows and not (n == kk and hs[0] > alpha * _COS_CEIL / (1.0 + alpha)):
        cand, _ = topk_cosine(codes, qcode, kk, normalized=True, valid=valid)
        n = _hybrid_candidates(acc, inv_ceil, codes, q64, inv_qnorm, alpha, cand, seen, hs, hi, n)
    out = np.empty((4, n))
    _hybrid_output(acc, touched, nt, cand, inv_ceil, codes, q64, inv_qnorm, seen, hs, hi, n, out)
    return out[0].astype(np.int64), out[1].copy(), out[2].copy(), out[3].copy()


_NO_ROWS = np.zeros(0, dtype=np.int64)


def warmup_index() -> tuple[Segment, np.ndarray, np.ndarray, np.ndarray]:
    """A two-row index (segment, doc_len, query terms, unit codes) to compile kernels on."""
    from sentient_kernels.lexical import TermCounts
    from sentient_kernels.segments import build_segment

    counts = TermCounts(
        np.array([0, 2, 3], dtype=np.int64),
        np.array([3, 9, 9], dtype=np.uint64),
        np.array([1, 2, 1], dtype=np.uint16),
        np.array([3, 1], dtype=np.int64),
    )
    seg = build_segment(counts, np.array([0, 1], dtype=np.int64))
    doc_len = np.array([3, 1], dtype=np.int32)
    terms = np.array([9, 3], dtype=np.uint64)
    codes = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    return seg, doc_len, terms, codes


def _warmup() -> None:
    seg, doc_len, terms, codes = warmup_index()
    scores([seg], terms, doc_len=doc_len)
    topk([seg], terms, 2, doc_len=doc_len, valid=np.ones(2, dtype=np.uint8))
    hybrid_topk([seg], terms, 2, doc_len=doc_len, codes=codes, query_code=codes[0], alpha=0.5)
