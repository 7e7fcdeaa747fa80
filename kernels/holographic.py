"""Exact top-k cosine search over float32 code rows (holographic memory recall).

Every memory trace has a fixed-length float32 code stored row-wise in an
``(M, D)`` C-contiguous matrix. Recall is the top-k rows by cosine with a query,
computed by one parallel streaming pass over the matrix: the rows are cut into
blocks, each block keeps its own top-k in a small heap while it streams, and
the per-block winners are merged at the end. Several queries share the pass
(:func:`topk_cosine_batch`): each row is read from memory once and dotted with
every query while it sits in L1. A single query over at most one block (a small
memory) takes one serial dispatch instead (:mod:`sentient_kernels.holographic_one`:
the same screen, scores and tie rule; its estimate reads four rows per pass).

Exactness. Every score that can reach the result is computed in float64 (a
float32 × float32 product is exact in float64), so it is within a few float64
ulps of the exactly rounded cosine and the order equals the float64 reference
(``tests/naive_holographic.py``) except between scores closer than ~1e-14; the
dot is finished by :func:`~sentient_kernels.topk_parts._exact_cosine` in strict
IEEE, so every scan gives a row the same bits.
A cheap float32 estimate (16 lanes per vector instead of 8) first rules out rows
that cannot beat the current k-th score even with its worst-case rounding error
added. Identical rows get bit-identical scores; ties go to the lower row index;
the result does not depend on the thread count or blocking.

NaN/inf in ``codes`` are detected during the scan (a non-finite row makes its
dot non-finite) instead of by a separate pass over the matrix, so validating a
1 GB matrix costs nothing extra. Rows excluded by ``valid`` are not read.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from sentient_kernels.checks import check_array, check_int
from sentient_kernels.config import jit

# Re-exported (``x as x``): bm25, maxscore, overlay, quantized and unchecked import
# these from here.
from sentient_kernels.holographic_one import _topk_into as _topk_into
from sentient_kernels.topk_parts import _dot_f32 as _dot_f32
from sentient_kernels.topk_parts import _dot_f64 as _dot_f64
from sentient_kernels.topk_parts import _exact_cosine, _sumsq_f32, _sumsq_f64
from sentient_kernels.topk_parts import _heap_push as _heap_push
from sentient_kernels.topk_parts import _heap_replace_root as _heap_replace_root
from sentient_kernels.topk_parts import _worse as _worse

__all__ = [
    "ONE_BLOCK_ROWS",
    "normalize_rows",
    "row_norms",
    "topk_cosine",
    "topk_cosine_batch",
]

# Each block of rows is one unit of parallel work with its own heaps. A block
# refines every row exactly until its heaps fill, and its k-th score (the
# screening threshold) is weaker than the global one, so blocks should be few
# and large: a few per thread for load balance (masked rows), never tiny.
# Results do not depend on the blocking (exact scores, strict total order).
_BLOCKS_PER_THREAD = 8
_MIN_BLOCK_ROWS = 2048
ONE_BLOCK_ROWS = _MIN_BLOCK_ROWS
"""Rows of one scan block: a matrix of at most this many rows is scanned serially, in one
dispatch (``holographic_one``); larger ones in parallel blocks."""
_NO_MASK = np.ones(1, dtype=np.uint8)

# --------------------------------------------------------------------- kernels


@jit()
def _prepare_queries(queries):
    """Per query: float64 copy, 1/|q| and whether float32 screening is safe; and gamma_D.

    For any summation order |dot32 - dot| <= gamma_D |x| |q| with
    gamma_D = D u / (1 - D u), u = 2^-24; screening is off (exact path only)
    for a query whose norm is outside [1e-15, 1e15], where float32
    underflow/overflow could break that bound.
    """
    nq, d = queries.shape
    unit = 2.0**-24
    can_screen = d * unit < 0.01
    gamma = d * unit / (1.0 - d * unit) if can_screen else 1.0
    q64 = np.empty((nq, d))
    inv_qnorm = np.empty(nq)
    q_screen = np.empty(nq, dtype=np.bool_)
    for q in range(nq):
        for j in range(d):
            q64[q, j] = queries[q, j]
        qq = _sumsq_f64(queries[q])
        inv_qnorm[q] = 1.0 / math.sqrt(qq)
        q_screen[q] = can_screen and 1e-30 < qq < 1e30
    return q64, inv_qnorm, q_screen, gamma


@jit()
def _scan_block(
    codes, queries, prepared, normalized, has_mask, valid, start, stop, b, heap_s, heap_i
):
    """Stream rows ``start..stop-1``; per query keep the best ``heap_s.shape[2]`` in heap ``b``.

    ``prepared`` is :func:`_prepare_queries` of ``queries``. Returns the heaps'
    fill (the same for every query) and the first non-finite row, or -1.

    Each (row, query) score is first estimated in float32 (16 lanes per vector
    instead of 8, four queries per pass over the row). Only when the estimate
    plus its rounding-error bound reaches the heap's current k-th score is the
    exact float64 score computed, and only exact scores enter the heaps. The
    estimate is skipped (exact path) when a row norm is outside [1e-15, 1e15].
    """
    q64, inv_qnorm, q_screen, gamma = prepared
    d = codes.shape[1]
    nq = queries.shape[0]
    kb = heap_s.shape[2]
    nq4 = nq - nq % 4
    est = np.empty(nq)
    n = 0
    for i in range(start, stop):
        if has_mask and valid[i] == 0:
            continue
        row = codes[i]
        # (A one-pass dot + norm for a single query measured 1.26-1.42x slower at 1M:
        # the two unfused reductions vectorise better. bench/topk_revision_ab.py)
        nn32 = _sumsq_f32(row)
        # NaN/inf anywhere in the row makes nn32 non-finite, failing this test.
        screen = n == kb and 1e-30 < nn32 < 1e30
        nn64 = -1.0
        if not (1e-30 < nn32 < 1e30):
            nn64 = _sumsq_f64(row)
            if not math.isfinite(nn64):
                return n, i
        if screen:
            for q0 in range(0, nq4, 4):
                a0 = np.float32(0.0)
                a1 = np.float32(0.0)
                a2 = np.float32(0.0)
                a3 = np.float32(0.0)
                for j in range(d):
                    x = row[j]
                    a0 += x * queries[q0, j]
                    a1 += x * queries[q0 + 1, j]
                    a2 += x * queries[q0 + 2, j]
                    a3 += x * queries[q0 + 3, j]
                est[q0] = a0
                est[q0 + 1] = a1
                est[q0 + 2] = a2
                est[q0 + 3] = a3
            for q in range(nq4, nq):
                est[q] = _dot_f32(row, queries[q])
            if normalized:
                est_scale = 1.0
                margin = 2.5 * gamma * math.sqrt(np.float64(nn32))
            else:
                est_scale = 1.0 / math.sqrt(np.float64(nn32))
                margin = 2.5 * gamma
        for q in range(nq):
            if (
                screen
                and q_screen[q]
                and est[q] * est_scale * inv_qnorm[q] + margin < heap_s[q, b, 0]
            ):
                continue
            if not normalized and nn64 < 0.0:
                nn64 = _sumsq_f64(row)
            s = _exact_cosine(_dot_f64(row, q64[q]), nn64, normalized, inv_qnorm[q])
            if n < kb:
                _heap_push(heap_s[q, b], heap_i[q, b], n, s, i)
            elif s > heap_s[q, b, 0]:
                # Rows arrive in increasing index order, so an equal score
                # always loses to the root: ">" is the full tie rule here.
                _heap_replace_root(heap_s[q, b], heap_i[q, b], kb, s, i)
        if n < kb:
            n += 1
    return n, -1


@jit(parallel=True)
def _scan_topk(
    codes, queries, normalized, has_mask, valid, block_rows, heap_s, heap_i, heap_n, bad
):
    """Stream the rows once; per (query, block) keep the best ``heap_s.shape[2]`` rows.

    heap_s, heap_i : (Q, nblocks, kb) output heaps; heap_n : (nblocks,) fill count
    (the same for every query); bad : (nblocks,) first non-finite row or -1.
    """
    m = codes.shape[0]
    prepared = _prepare_queries(queries)
    for b in prange(heap_n.shape[0]):
        start = b * block_rows
        stop = min(m, start + block_rows)
        fill, first_bad = _scan_block(
            codes, queries, prepared, normalized, has_mask, valid, start, stop, b, heap_s, heap_i
        )
        heap_n[b] = fill
        bad[b] = first_bad


@jit()
def _merge_one(heap_s, heap_i, heap_n, k, out_i, out_s):
    """One query's (nblocks, kb) heaps into its top-k, sorted by (-score, index)."""
    nblocks = heap_s.shape[0]
    total = 0
    for b in range(nblocks):
        total += heap_n[b]
    cand_s = np.empty(total)
    cand_i = np.empty(total, dtype=np.int64)
    pos = 0
    for b in range(nblocks):
        for t in range(heap_n[b]):
            cand_s[pos] = heap_s[b, t]
            cand_i[pos] = heap_i[b, t]
            pos += 1
    # Index order first, then a stable sort on -score: ties keep the lower index.
    by_index = np.argsort(cand_i)
    s_sorted = np.empty(total)
    for t in range(total):
        s_sorted[t] = -cand_s[by_index[t]]
    by_score = np.argsort(s_sorted, kind="mergesort")
    for t in range(k):
        src = by_index[by_score[t]]
        out_i[t] = cand_i[src]
        out_s[t] = cand_s[src]


@jit()
def _merge_topk(heap_s, heap_i, heap_n, k, out_i, out_s):
    """Merge per-block heaps into the global top-k of every query."""
    for q in range(heap_s.shape[0]):
        _merge_one(heap_s[q], heap_i[q], heap_n, k, out_i[q], out_s[q])


@jit(parallel=True)
def _row_norms(codes, out):
    for i in prange(codes.shape[0]):
        out[i] = math.sqrt(_sumsq_f64(codes[i]))


@jit(parallel=True)
def _scale_rows(codes, norms, out):
    d = codes.shape[1]
    for i in prange(codes.shape[0]):
        inv = 1.0 / norms[i] if norms[i] > 0.0 else 0.0
        for j in range(d):
            out[i, j] = np.float32(np.float64(codes[i, j]) * inv)


# --------------------------------------------------------------------- wrappers


def _check_codes(codes: object) -> np.ndarray:
    # finite=False: a separate isfinite pass would read (and allocate) as much as
    # the search itself; the scan detects non-finite rows instead.
    return check_array("codes", codes, dtype=np.float32, ndim=2, finite=False)


def _check_valid(valid: object, m: int) -> np.ndarray:
    if isinstance(valid, np.ndarray) and valid.dtype == np.bool_:
        return check_array("valid", valid, dtype=np.bool_, shape=(m,)).view(np.uint8)
    return check_array("valid", valid, dtype=np.uint8, shape=(m,))


def _search(codes, queries, k, normalized, valid):
    m = codes.shape[0]
    if valid is None:
        has_mask = False
        mask = np.ones(1, dtype=np.uint8)
        n_valid = m
    else:
        has_mask = True
        mask = _check_valid(valid, m)
        n_valid = int(np.count_nonzero(mask))
    nq = queries.shape[0]
    kk = min(k, n_valid)
    block_rows = max(_MIN_BLOCK_ROWS, -(-m // (_BLOCKS_PER_THREAD * numba.get_num_threads())))
    nblocks = -(-m // block_rows)
    kb = min(kk, block_rows)
    out_i = np.empty((nq, kk), dtype=np.int64)
    out_s = np.empty((nq, kk), dtype=np.float64)
    if kk == 0:
        return out_i, out_s
    heap_s = np.empty((nq, nblocks, kb), dtype=np.float64)
    heap_i = np.empty((nq, nblocks, kb), dtype=np.int64)
    heap_n = np.empty(nblocks, dtype=np.int64)
    bad = np.empty(nblocks, dtype=np.int64)
    if nblocks > 1:
        _scan_topk(
            codes,
            queries,
            bool(normalized),
            has_mask,
            mask,
            block_rows,
            heap_s,
            heap_i,
            heap_n,
            bad,
        )
    else:  # one block (a small memory): no parallel region to wake, the same scan
        heap_n[0], bad[0] = _scan_block(
            codes,
            queries,
            _prepare_queries(queries),
            bool(normalized),
            has_mask,
            mask,
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
    return out_i, out_s


def topk_cosine(
    codes: np.ndarray,
    query: np.ndarray,
    k: int,
    *,
    normalized: bool = False,
    valid: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k rows of ``codes`` by cosine similarity with ``query``.

    Parameters
    ----------
    codes : (M, D) float32, C-contiguous
        One code per row. NaN/inf raise ValueError (detected during the scan).
    query : (D,) float32
        Finite, not all zero.
    k : int
        Number of rows wanted, >= 1.
    normalized : bool
        The caller guarantees every row has unit norm, so the row norm is not
        computed and score = dot / |query|. This is trusted, not checked: with
        non-unit rows the scores are plain scaled dots.
    valid : (M,) bool or uint8, optional
        Rows with ``valid == 0`` are skipped (deleted traces, vetoes).

    Returns
    -------
    indices : (k',) int64
        Row indices, best first; ties broken by lower index.
        ``k' = min(k, number of valid rows)``.
    scores : (k',) float64
        Cosine of each row; 0 for a zero row.
    """
    codes = _check_codes(codes)
    d = codes.shape[1]
    m = codes.shape[0]
    # One block: the query's values are checked by the kernel (status -2), not by
    # two more passes here; a failed check falls through to the full checks below.
    one = 0 < m <= _MIN_BLOCK_ROWS
    query = check_array("query", query, dtype=np.float32, shape=(d,), finite=not one)
    k = check_int("k", k, lo=1)
    if one:  # the same scan in one dispatch (small memories)
        has_mask = valid is not None
        mask = _check_valid(valid, m) if has_mask else _NO_MASK
        out_i = np.empty(min(k, m), dtype=np.int64)
        out_s = np.empty(min(k, m), dtype=np.float64)
        got = _topk_into(codes, query, k, bool(normalized), has_mask, mask, out_i, out_s)
        if got >= 0:
            return out_i[:got], out_s[:got]
        # -2 (a zero or non-finite query) is raised just below; -3 (a non-finite
        # row) by the general search, which names the row.
        query = check_array("query", query, dtype=np.float32, shape=(d,))
    if not query.any():
        raise ValueError("query must not be all zeros (its cosine is undefined)")
    out_i, out_s = _search(codes, query.reshape(1, d), k, normalized, valid)
    return out_i[0], out_s[0]


def topk_cosine_batch(
    codes: np.ndarray,
    queries: np.ndarray,
    k: int,
    *,
    normalized: bool = False,
    valid: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of several queries in one pass over ``codes``.

    Same as :func:`topk_cosine` for each row of ``queries`` (bit-identical
    results), but each code row is read from memory once for all queries.

    Parameters
    ----------
    codes : (M, D) float32, C-contiguous
    queries : (Q, D) float32, C-contiguous
        No all-zero query.
    k, normalized, valid
        As in :func:`topk_cosine`.

    Returns
    -------
    indices : (Q, k') int64
    scores : (Q, k') float64
    """
    codes = _check_codes(codes)
    d = codes.shape[1]
    queries = check_array("queries", queries, dtype=np.float32, shape=(None, d))
    k = check_int("k", k, lo=1)
    zero = ~queries.any(axis=1)
    if zero.any():
        raise ValueError(
            f"queries row {int(np.argmax(zero))} is all zeros (its cosine is undefined)"
        )
    return _search(codes, queries, k, normalized, valid)


def row_norms(codes: np.ndarray) -> np.ndarray:
    """Euclidean norm of every row (float64 accumulation), in parallel.

    Parameters
    ----------
    codes : (M, D) float32, C-contiguous, finite

    Returns
    -------
    (M,) float64
    """
    codes = _check_codes(codes)
    out = np.empty(codes.shape[0], dtype=np.float64)
    _row_norms(codes, out)
    bad = ~np.isfinite(out)
    if bad.any():
        raise ValueError(
            f"codes contains non-finite value(s) (NaN or inf) in row {int(np.argmax(bad))}"
        )
    return out


def normalize_rows(codes: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Scale every row to unit norm (zero rows stay zero).

    Parameters
    ----------
    codes : (M, D) float32, C-contiguous, finite
    out : (M, D) float32, C-contiguous, optional
        Destination; may be ``codes`` itself (in place). New array if omitted.

    Returns
    -------
    (M, D) float32
        ``out``.
    """
    norms = row_norms(codes)
    if out is None:
        out = np.empty_like(codes)
    else:
        out = check_array("out", out, dtype=np.float32, shape=codes.shape, finite=False)
    _scale_rows(codes, norms, out)
    return out


def _warmup() -> None:
    # The parts this module is made of (not in warmup.MODULES: no public names of their own).
    from sentient_kernels import holographic_one, topk_parts

    topk_parts._warmup()
    holographic_one._warmup()
    query = np.ones(4, dtype=np.float32)
    # Read-only queries (e.g. an encoder's frozen code) are a separate Numba type.
    frozen = np.ones(4, dtype=np.float32)
    frozen.setflags(write=False)
    # One block (the serial scan) and several (the parallel one).
    for m in (3, 2 * _MIN_BLOCK_ROWS + 1):
        codes = np.ones((m, 4), dtype=np.float32)
        topk_cosine(codes, query, 2)
        topk_cosine(codes, query, 2, normalized=True, valid=np.ones(m, dtype=np.bool_))
        topk_cosine_batch(codes, np.ones((2, 4), dtype=np.float32), 2)
        topk_cosine(codes, frozen, 2, normalized=True, valid=np.ones(m, dtype=np.bool_))
    codes = np.ones((3, 4), dtype=np.float32)
    normalize_rows(codes)
    mask = np.ones(3, dtype=np.uint8)
    _topk_into(codes, query, 2, False, True, mask, np.empty(2, np.int64), np.empty(2))
