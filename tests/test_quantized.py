"""sentient_kernels.quantized: int8 codes whose top-k is the float32 kernel's, exactly.

"Identical" is checked bit for bit: the ids with ``array_equal`` and the
scores with ``array_equal`` on the float64 values, against
:func:`sentient_kernels.holographic.topk_cosine` on the float32 codes; the ids
are also checked against the fsum reference (``tests/naive_holographic.py``)
wherever no two scores are within its 1e-12 tolerance of each other.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_kernels import holographic as holo
from sentient_kernels import quantized as qz
from sentient_kernels.dot_i8 import split_query
from tests.naive import quantized as naive


def _same_as_float32(codes, qc, query, k, normalized=False, valid=None):
    want = holo.topk_cosine(codes, query, k, normalized=normalized, valid=valid)
    got_i, got_s, cands = qz.exact_topk_quantised_stats(
        qc, codes, query, k, normalized=normalized, valid=valid
    )
    np.testing.assert_array_equal(got_i, want[0])
    np.testing.assert_array_equal(got_s, want[1])
    assert got_i.dtype == np.int64 and got_s.dtype == np.float64
    return cands


def _upper_bounds(qc, query, normalized):
    """The kernel's upper bound for every row (one block whose heap holds every row)."""
    m, d = qc.codes.shape
    p = np.empty(d, dtype=np.int16)
    t, pnorm, enorm = qz._quantise_query(query, qz._query_pmax(d), p)
    h = np.empty(d, dtype=np.int8)
    lo = np.empty(d, dtype=np.int8)
    corr = split_query(p, h, lo)
    heap = np.empty((1, m))
    heap_n = np.empty(1, dtype=np.int64)
    cand_row = np.empty(m, dtype=np.int64)
    cand_up = np.empty(m)
    cand_n = np.empty(1, dtype=np.int64)
    mask = np.ones(1, dtype=np.uint8)
    qz._scan_bounds(
        qc.codes, qc.scales, qc.bounds, qc.norms, p, h, lo, corr, t, pnorm, enorm, normalized,
        False, mask, m, heap, heap_n, cand_row, cand_up, cand_n,
    )  # fmt: skip
    # With room for every row in the heap, every row is a candidate, in order.
    assert cand_n[0] == m
    np.testing.assert_array_equal(cand_row, np.arange(m))
    return cand_up


# ------------------------------------------------------------------ quantise


def test_quantise_matches_reference_and_bounds_hold():
    rng = np.random.default_rng(5)
    codes = rng.standard_normal((300, 37), dtype=np.float32)
    codes[7] = 0.0
    codes[8] *= np.float32(1e-32)
    codes[9] *= np.float32(1e31)
    qc = qz.quantise(codes)
    want_c, want_s, want_n = naive.quantise(codes)
    np.testing.assert_array_equal(qc.codes, want_c)
    np.testing.assert_array_equal(qc.scales, want_s)
    np.testing.assert_allclose(qc.norms, want_n, rtol=1e-7)
    err = naive.error_norm(codes, qc.codes, qc.scales)
    assert (qc.bounds.astype(np.float64) >= err).all()
    # Tight, not merely valid: at most a float32 ulp or two above the exact error.
    finite = np.isfinite(qc.bounds)
    np.testing.assert_allclose(qc.bounds[finite], err[finite], rtol=1e-6)
    assert qc.bounds[7] == 0.0 and qc.scales[7] == 0.0
    assert qc.codes.dtype == np.int8 and np.abs(qc.codes.astype(int)).max() == 127
    # Norms outside float32's comfortable range are marked "always re-score".
    assert np.isinf(qc.bounds[8]) and np.isinf(qc.bounds[9])


def test_quantised_memory_is_a_quarter_plus_row_metadata():
    codes = np.ones((1000, 256), dtype=np.float32)
    qc = qz.quantise(codes)
    total = qc.codes.nbytes + qc.scales.nbytes + qc.bounds.nbytes + qc.norms.nbytes
    assert total == codes.nbytes // 4 + 12 * 1000


@pytest.mark.parametrize("normalized", [False, True])
def test_upper_bound_is_never_below_the_exact_score(normalized):
    # The whole method rests on this: check it directly on every row.
    rng = np.random.default_rng(17)
    codes = rng.standard_normal((2000, 64), dtype=np.float32)
    if normalized:
        holo.normalize_rows(codes, out=codes)
    codes[::97] = 0.0
    qc = qz.quantise(codes)
    for _ in range(50):
        query = rng.standard_normal(64, dtype=np.float32)
        exact = naive.topk_cosine(codes, query, 2000, normalized)
        upper = _upper_bounds(qc, query, normalized)
        assert (upper[exact[0]] >= exact[1]).all()


# ------------------------------------------------------------------ exactness


@pytest.mark.parametrize(
    ("m", "d", "normalized", "n_queries"),
    [
        (1, 8, False, 40),
        (50, 3, False, 100),
        (3000, 64, False, 200),
        (3000, 64, True, 200),
        (20000, 256, True, 250),
        (20000, 256, False, 250),
    ],
)
def test_identical_to_float32_over_many_queries(m, d, normalized, n_queries):
    # 1,040 queries across the cases, k from 1 to beyond m.
    rng = np.random.default_rng(m + d)
    codes = rng.standard_normal((m, d), dtype=np.float32)
    if normalized:
        holo.normalize_rows(codes, out=codes)
    qc = qz.quantise(codes)
    cands = []
    for _ in range(n_queries):
        query = rng.standard_normal(d, dtype=np.float32)
        k = int(rng.integers(1, min(m, 40) + 2))
        cands.append(_same_as_float32(codes, qc, query, k, normalized))
    if m >= 20000:
        # The bound must actually prune: a few dozen float32 rows, not thousands.
        assert np.median(cands) < 200, np.median(cands)


def test_matches_fsum_reference_ids():
    rng = np.random.default_rng(8)
    codes = rng.standard_normal((5000, 128), dtype=np.float32)
    qc = qz.quantise(codes)
    for _ in range(30):
        query = rng.standard_normal(128, dtype=np.float32)
        want = naive.topk_cosine(codes, query, 10)
        got = qz.exact_topk_quantised(qc, codes, query, 10)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-12)


def test_queries_close_to_stored_rows():
    # The real workload: a query near an existing code, top-1 far above the rest.
    rng = np.random.default_rng(23)
    codes = holo.normalize_rows(rng.standard_normal((4000, 256), dtype=np.float32))
    qc = qz.quantise(codes)
    for i in rng.integers(0, 4000, 60):
        query = codes[i] + np.float32(0.01) * rng.standard_normal(256, dtype=np.float32)
        _same_as_float32(codes, qc, query.astype(np.float32), 5, normalized=True)


# ------------------------------------------------------------------ adversarial near-ties


def _one_ulp_family(rng, n, d):
    """Rows that differ from one base row by one float32 ulp in one coordinate each."""
    base = rng.standard_normal(d, dtype=np.float32)
    rows = np.repeat(base[None, :], n, axis=0)
    for r in range(n):
        j = r % d
        toward = np.float32(np.inf) if r % 2 else np.float32(-np.inf)
        rows[r, j] = np.nextafter(rows[r, j], toward)
    return base, rows


@pytest.mark.parametrize("normalized", [False, True])
def test_rows_one_ulp_apart(normalized):
    rng = np.random.default_rng(31)
    base, family = _one_ulp_family(rng, 300, 48)
    noise = rng.standard_normal((2000, 48), dtype=np.float32)
    codes = np.concatenate([noise[:1000], family, noise[1000:]])
    # Every row of the family quantises alike; only the float32 re-score can order them.
    qc = qz.quantise(codes)
    for trial in range(40):
        query = base + np.float32(0.05) * rng.standard_normal(48, dtype=np.float32)
        k = (1, 7, 150, 299, 300, 301)[trial % 6]
        _same_as_float32(codes, qc, query.astype(np.float32), k, normalized)


def test_duplicates_and_planted_ties_at_the_kth_place():
    rng = np.random.default_rng(37)
    d = 32
    codes = rng.standard_normal((3000, d), dtype=np.float32)
    query = rng.standard_normal(d, dtype=np.float32)
    exact = holo.topk_cosine(codes, query, 10)
    # Copy the 10th best row to 25 places before and after it: a 26-way tie at
    # the k-th place, which must go to the lowest indices.
    tenth = codes[exact[0][9]].copy()
    for pos in rng.choice(3000, 25, replace=False):
        codes[pos] = tenth
    qc = qz.quantise(codes)
    for k in (9, 10, 11, 20, 35, 36, 37):
        _same_as_float32(codes, qc, query, k)
    for _ in range(30):
        _same_as_float32(codes, qc, rng.standard_normal(d, dtype=np.float32), 12)


@pytest.mark.parametrize("normalized", [True, False])
def test_rows_of_later_chunks_one_step_above_the_heap_root_are_kept(normalized):
    # Exact codes (x = c / 1024, scale 2^-10, zero error) and a one-hot query
    # (exact int16 copy) leave only the float-rounding slack in the bounds, so
    # the winners below beat the heap's root by one code step (< 1e-3): a chunk
    # skipped on a loose test of its upper bounds against the root loses them.
    m = 4 * qz._CHUNK + 17
    rng = np.random.default_rng(71)
    c = rng.integers(-100, 50, size=(m, 8)).astype(np.float32)
    c[:, 1] = 127  # every row's max |c|: the scale is exactly 2^-10
    c[:, 0] = rng.integers(-100, 50, size=m)
    c[5, 0], c[9, 0] = 60, 60  # the early best rows
    c[2 * qz._CHUNK + 3, 0] = 61  # one step above them, two chunks later
    c[m - 2, 0] = 62  # and in the last, partial chunk
    codes = np.ascontiguousarray(c / np.float32(1024))
    if not normalized:
        codes[:, 2:] = 0  # equal norms except column 0, so the cosine keeps the order
    qc = qz.quantise(codes)
    assert qc.bounds.max() < 1e-40  # zero error, rounded up by one subnormal step
    query = np.zeros(8, dtype=np.float32)
    query[0] = 1.0
    for k in (1, 2, 3, 5):
        _same_as_float32(codes, qc, query, k, normalized)
    ids, _ = qz.exact_topk_quantised(qc, codes, query, 3, normalized=normalized)
    assert ids.tolist() == [m - 2, 2 * qz._CHUNK + 3, 5]


def test_all_rows_identical_returns_first_k_indices():
    codes = np.tile(np.arange(1, 17, dtype=np.float32), (500, 1))
    qc = qz.quantise(codes)
    query = np.ones(16, dtype=np.float32)
    ids = _same_as_float32(codes, qc, query, 7)
    assert ids == 500  # every row is a candidate: all tie
    np.testing.assert_array_equal(qz.exact_topk_quantised(qc, codes, query, 7)[0], np.arange(7))


def test_zero_rows_score_zero_and_rank_above_negative_rows():
    codes = np.array([[-1, 0], [0, 0], [1, 1], [0, 0], [-2, -1]], dtype=np.float32)
    qc = qz.quantise(codes)
    query = np.array([1, 0], dtype=np.float32)
    ids, scores = qz.exact_topk_quantised(qc, codes, query, 5)
    np.testing.assert_array_equal(ids, [2, 1, 3, 4, 0])
    assert scores[1] == 0.0 and scores[2] == 0.0
    _same_as_float32(codes, qc, query, 5)
    _same_as_float32(codes, qc, query, 5, normalized=True)


def test_one_row_and_k_larger_than_rows():
    codes = np.array([[0.5, -2.0, 3.0]], dtype=np.float32)
    qc = qz.quantise(codes)
    query = np.array([1.0, 1.0, 1.0], dtype=np.float32)
    for k in (1, 2, 1000):
        _same_as_float32(codes, qc, query, k)
    rng = np.random.default_rng(2)
    codes = rng.standard_normal((40, 6), dtype=np.float32)
    qc = qz.quantise(codes)
    query = rng.standard_normal(6, dtype=np.float32)
    ids, _ = qz.exact_topk_quantised(qc, codes, query, 100)
    assert sorted(ids.tolist()) == list(range(40))
    _same_as_float32(codes, qc, query, 100)


def test_empty_matrix_and_empty_mask_return_nothing():
    codes = np.empty((0, 4), dtype=np.float32)
    qc = qz.quantise(codes)
    ids, scores = qz.exact_topk_quantised(qc, codes, np.ones(4, dtype=np.float32), 3)
    assert ids.shape == (0,) and scores.shape == (0,)
    codes = np.ones((5, 4), dtype=np.float32)
    qc = qz.quantise(codes)
    got = qz.exact_topk_quantised(
        qc, codes, np.ones(4, dtype=np.float32), 3, valid=np.zeros(5, dtype=np.bool_)
    )
    assert got[0].shape == (0,)


@pytest.mark.parametrize("mask_dtype", [np.bool_, np.uint8])
def test_masks_match_float32(mask_dtype):
    rng = np.random.default_rng(41)
    codes = rng.standard_normal((6000, 24), dtype=np.float32)
    qc = qz.quantise(codes)
    for _ in range(20):
        valid = (rng.random(6000) < 0.3).astype(mask_dtype)
        query = rng.standard_normal(24, dtype=np.float32)
        _same_as_float32(codes, qc, query, 15, valid=valid)


def test_extreme_magnitudes_are_rescored_exactly():
    rng = np.random.default_rng(43)
    codes = rng.standard_normal((400, 16), dtype=np.float32)
    codes[:50] *= np.float32(1e-36)  # norms below the float32 bound range
    codes[50:100] *= np.float32(1e33)
    codes[100] = np.float32(1e-45)  # subnormal: the scale underflows
    qc = qz.quantise(codes)
    for _ in range(20):
        query = rng.standard_normal(16, dtype=np.float32)
        _same_as_float32(codes, qc, query, 10)
    query = np.full(16, 1e-30, dtype=np.float32)
    _same_as_float32(codes, qc, query, 10)


def test_blocks_and_thread_count_do_not_change_the_answer(monkeypatch):
    rng = np.random.default_rng(47)
    codes = rng.standard_normal((5000, 20), dtype=np.float32)
    qc = qz.quantise(codes)
    queries = rng.standard_normal((10, 20), dtype=np.float32)
    before = [qz.exact_topk_quantised(qc, codes, q, 30) for q in queries]
    monkeypatch.setattr(qz, "_MIN_BLOCK_ROWS", 7)
    monkeypatch.setattr(qz, "_BLOCKS_PER_THREAD", 200)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        for q, (ids, scores) in zip(queries, before, strict=True):
            got = qz.exact_topk_quantised(qc, codes, q, 30)
            np.testing.assert_array_equal(got[0], ids)
            np.testing.assert_array_equal(got[1], scores)
    finally:
        numba.set_num_threads(threads)


def test_memmapped_full_codes(tmp_path):
    rng = np.random.default_rng(53)
    codes = rng.standard_normal((3000, 32), dtype=np.float32)
    path = tmp_path / "codes.f32"
    codes.tofile(path)
    mapped = np.memmap(path, dtype=np.float32, mode="r", shape=codes.shape)
    qc = qz.quantise(codes)
    for _ in range(10):
        query = rng.standard_normal(32, dtype=np.float32)
        want = holo.topk_cosine(codes, query, 8)
        got = qz.exact_topk_quantised(qc, mapped, query, 8)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    del mapped


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    m=st.integers(1, 60),
    d=st.integers(1, 9),
    normalized=st.booleans(),
)
def test_hypothesis_small_integer_codes_with_many_ties(data, m, d, normalized):
    # Small integer values make exact ties and equal quantisations common.
    vals = data.draw(st.lists(st.integers(-3, 3), min_size=m * d, max_size=m * d))
    # A power-of-two scale keeps ties exact and tries large and small norms
    # (the float32 kernel's rounding grows with the norm when normalized=True).
    scale = np.float32(2.0 ** data.draw(st.sampled_from([0, 24, -24])))
    codes = np.array(vals, dtype=np.float32).reshape(m, d) * scale
    qv = data.draw(st.lists(st.integers(-3, 3), min_size=d, max_size=d).filter(any))
    query = np.array(qv, dtype=np.float32)
    k = data.draw(st.integers(1, m + 3))
    use_mask = data.draw(st.booleans())
    valid = None
    if use_mask:
        valid = np.array(data.draw(st.lists(st.booleans(), min_size=m, max_size=m)))
    qc = qz.quantise(codes)
    _same_as_float32(codes, qc, query, k, normalized, valid)


# ------------------------------------------------------------------ argument checks


def test_non_finite_codes_are_rejected_by_quantise():
    codes = np.ones((4, 3), dtype=np.float32)
    codes[2, 1] = np.nan
    with pytest.raises(ValueError, match="row 2"):
        qz.quantise(codes)
    codes[2, 1] = np.inf
    with pytest.raises(ValueError, match="row 2"):
        qz.quantise(codes)


def test_non_finite_query_and_candidate_rows_are_rejected():
    codes = np.eye(4, dtype=np.float32)
    qc = qz.quantise(codes)
    for bad in (np.nan, np.inf, -np.inf):
        query = np.ones(4, dtype=np.float32)
        query[1] = bad
        with pytest.raises(ValueError, match="query"):
            qz.exact_topk_quantised(qc, codes, query, 2)
    with pytest.raises(ValueError, match="all zeros"):
        qz.exact_topk_quantised(qc, codes, np.zeros(4, dtype=np.float32), 2)
    # float32 codes changed after quantising: a NaN in a candidate row is caught.
    broken = codes.copy()
    broken[0, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        qz.exact_topk_quantised(qc, broken, np.ones(4, dtype=np.float32), 4)


def test_inconsistent_quantised_arrays_raise_instead_of_reading_garbage():
    rng = np.random.default_rng(59)
    codes = rng.standard_normal((50, 8), dtype=np.float32)
    qc = qz.quantise(codes)
    broken = qz.QuantisedCodes(qc.codes, qc.scales, np.full(50, np.nan, np.float32), qc.norms)
    with pytest.raises(ValueError, match="does not describe"):
        qz.exact_topk_quantised(broken, codes, rng.standard_normal(8, dtype=np.float32), 5)


def test_wrong_types_and_shapes_are_rejected():
    codes = np.ones((5, 4), dtype=np.float32)
    qc = qz.quantise(codes)
    query = np.ones(4, dtype=np.float32)
    with pytest.raises(TypeError, match="codes"):
        qz.quantise(codes.astype(np.float64))
    with pytest.raises(TypeError, match="full_codes"):
        qz.exact_topk_quantised(qc, codes.astype(np.float64), query, 2)
    with pytest.raises(TypeError, match="query"):
        qz.exact_topk_quantised(qc, codes, query.astype(np.float64), 2)
    with pytest.raises(TypeError, match="quantised"):
        qz.exact_topk_quantised(tuple(qc), codes, query, 2)
    with pytest.raises(ValueError, match=r"quantised\.codes"):
        qz.exact_topk_quantised(qz.quantise(codes[:4]), codes, query, 2)
    with pytest.raises(ValueError, match="query"):
        qz.exact_topk_quantised(qc, codes, np.ones(3, dtype=np.float32), 2)
    with pytest.raises(ValueError, match="k"):
        qz.exact_topk_quantised(qc, codes, query, 0)
    with pytest.raises(ValueError, match="valid"):
        qz.exact_topk_quantised(qc, codes, query, 2, valid=np.ones(4, dtype=np.bool_))
    with pytest.raises(ValueError, match="C-contiguous"):
        qz.exact_topk_quantised(qc, np.asfortranarray(np.ones((5, 4), np.float32)), query, 2)
    with pytest.raises(ValueError, match="too many columns"):
        d = 2**31 // 127 + 1  # one more column and a sum of 127 · 1 could overflow int32
        wide = np.ones((1, d), dtype=np.float32)
        qz.exact_topk_quantised(qz.quantise(wide), wide, np.ones(d, np.float32), 1)
