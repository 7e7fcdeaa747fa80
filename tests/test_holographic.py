"""sentient_kernels.holographic: exact top-k cosine against the fsum reference."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_kernels import holographic as holo
from sentient_kernels import interference
from tests.naive import holographic as naive


def _random_codes(rng, m, d, zero_rows=()):
    codes = rng.standard_normal((m, d), dtype=np.float32)
    codes[list(zero_rows)] = 0.0
    return codes


def _unit_rows(rng, m, d):
    codes = rng.standard_normal((m, d)).astype(np.float32)
    return holo.normalize_rows(codes)


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Force many small row blocks so multi-block merging is exercised on small inputs."""
    monkeypatch.setattr(holo, "_MIN_BLOCK_ROWS", 5)
    monkeypatch.setattr(holo, "_BLOCKS_PER_THREAD", 64)


def _assert_same(got, want):
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-12)
    assert got[0].dtype == np.int64
    assert got[1].dtype == np.float64


# ------------------------------------------------------------------ exactness


@pytest.mark.parametrize(
    ("m", "d", "k", "normalized"),
    [
        (1, 8, 1, False),
        (7, 3, 4, False),
        (500, 16, 10, False),
        (3000, 64, 25, False),
        (3000, 64, 25, True),
        (5000, 256, 10, False),
        (5000, 256, 3, True),
        (20000, 32, 50, False),
    ],
)
def test_matches_reference_on_random_codes(m, d, k, normalized):
    rng = np.random.default_rng(m * 1000 + d + k)
    codes = _unit_rows(rng, m, d) if normalized else _random_codes(rng, m, d)
    query = rng.standard_normal(d, dtype=np.float32)
    got = holo.topk_cosine(codes, query, k, normalized=normalized)
    _assert_same(got, naive.topk_cosine(codes, query, k, normalized=normalized))


@pytest.mark.parametrize("normalized", [False, True])
def test_many_blocks_match_reference(tiny_blocks, normalized):
    rng = np.random.default_rng(3)
    codes = _unit_rows(rng, 997, 24) if normalized else _random_codes(rng, 997, 24)
    query = rng.standard_normal(24, dtype=np.float32)
    for k in (1, 4, 5, 6, 13, 996, 997, 2000):
        got = holo.topk_cosine(codes, query, k, normalized=normalized)
        _assert_same(got, naive.topk_cosine(codes, query, k, normalized=normalized))


def test_near_ties_below_float32_resolution_are_ordered_exactly():
    # Rows differ by ~1e-6 relative: their float32 dot estimates are within the
    # screening error bound of each other, so only the exact float64 pass can
    # order them. The reference orders them by exact (fsum) scores.
    rng = np.random.default_rng(11)
    d = 256
    base = rng.standard_normal(d)
    codes = (base + 1e-6 * rng.standard_normal((20000, d))).astype(np.float32)
    query = (base + 0.5 * rng.standard_normal(d)).astype(np.float32)
    unit = holo.normalize_rows(codes)
    want = naive.topk_cosine(codes, query, 100)
    want_unit = naive.topk_cosine(unit, query, 100, normalized=True)
    for k in (1, 10, 100):
        _assert_same(holo.topk_cosine(codes, query, k), (want[0][:k], want[1][:k]))
        _assert_same(
            holo.topk_cosine(unit, query, k, normalized=True),
            (want_unit[0][:k], want_unit[1][:k]),
        )


def test_extreme_magnitudes_take_the_exact_path():
    # Norms outside [1e-15, 1e15] over/underflow float32 squares; such rows skip
    # the float32 estimate and must still rank exactly.
    rng = np.random.default_rng(5)
    codes = _random_codes(rng, 6000, 32)
    codes[::3] *= np.float32(1e25)
    codes[1::3] *= np.float32(1e-25)
    query = rng.standard_normal(32, dtype=np.float32)
    _assert_same(holo.topk_cosine(codes, query, 40), naive.topk_cosine(codes, query, 40))
    big_query = query * np.float32(1e20)
    _assert_same(holo.topk_cosine(codes, big_query, 40), naive.topk_cosine(codes, big_query, 40))


def test_duplicate_rows_tie_exactly_and_lower_index_wins(tiny_blocks):
    rng = np.random.default_rng(2)
    codes = _random_codes(rng, 300, 16)
    dup = codes[17].copy()
    positions = [3, 17, 40, 41, 150, 299]
    codes[positions] = dup
    idx, scores = holo.topk_cosine(codes, dup, 4)
    np.testing.assert_array_equal(idx, positions[:4])
    assert len(set(scores.tolist())) == 1
    assert scores[0] == pytest.approx(1.0, abs=1e-12)
    _assert_same((idx, scores), naive.topk_cosine(codes, dup, 4))


@pytest.mark.parametrize("block_rows", [5, 64, 2048])
@pytest.mark.parametrize("k", [1, 3, 30])
def test_all_rows_identical_returns_first_k_indices(monkeypatch, block_rows, k):
    # Full heaps meeting exact ties: a later equal row must never displace an earlier one.
    monkeypatch.setattr(holo, "_MIN_BLOCK_ROWS", block_rows)
    codes = np.tile(np.arange(1, 9, dtype=np.float32), (5000, 1))
    for normalized in (False, True):
        idx, _ = holo.topk_cosine(codes, np.ones(8, dtype=np.float32), k, normalized=normalized)
        np.testing.assert_array_equal(idx, np.arange(k))


def test_k_larger_than_rows_returns_every_row_sorted():
    rng = np.random.default_rng(9)
    codes = _random_codes(rng, 12, 5)
    query = rng.standard_normal(5, dtype=np.float32)
    idx, scores = holo.topk_cosine(codes, query, 1000)
    assert idx.shape == (12,)
    assert sorted(idx.tolist()) == list(range(12))
    _assert_same((idx, scores), naive.topk_cosine(codes, query, 1000))


def test_single_row_and_k_one():
    codes = np.array([[3.0, 4.0]], dtype=np.float32)
    idx, scores = holo.topk_cosine(codes, np.array([1.0, 0.0], dtype=np.float32), 1)
    np.testing.assert_array_equal(idx, [0])
    assert scores[0] == pytest.approx(0.6, abs=1e-12)


def test_zero_rows_score_zero_and_rank_above_negative_rows():
    rng = np.random.default_rng(4)
    codes = _random_codes(rng, 40, 6, zero_rows=(0, 7, 39))
    query = rng.standard_normal(6, dtype=np.float32)
    idx, scores = holo.topk_cosine(codes, query, 40)
    by_row = dict(zip(idx.tolist(), scores.tolist(), strict=True))
    assert by_row[0] == by_row[7] == by_row[39] == 0.0
    _assert_same((idx, scores), naive.topk_cosine(codes, query, 40))


def test_empty_matrix_returns_empty():
    idx, scores = holo.topk_cosine(np.zeros((0, 4), np.float32), np.ones(4, np.float32), 3)
    assert idx.shape == scores.shape == (0,)


# ------------------------------------------------------------------ masks


@pytest.mark.parametrize("mask_dtype", [np.bool_, np.uint8])
def test_masked_rows_are_excluded(tiny_blocks, mask_dtype):
    rng = np.random.default_rng(6)
    codes = _random_codes(rng, 400, 12)
    query = rng.standard_normal(12, dtype=np.float32)
    valid = (rng.random(400) < 0.3).astype(mask_dtype)
    best = holo.topk_cosine(codes, query, 1)[0][0]
    valid[best] = 0  # the unmasked winner must disappear
    got = holo.topk_cosine(codes, query, 25, valid=valid)
    assert best not in got[0]
    assert valid[got[0]].all()
    _assert_same(got, naive.topk_cosine(codes, query, 25, valid=valid))


def test_mask_leaving_fewer_rows_than_k_and_none():
    codes = np.eye(5, dtype=np.float32)
    query = np.ones(5, dtype=np.float32)
    valid = np.array([0, 1, 0, 1, 0], dtype=np.uint8)
    idx, _ = holo.topk_cosine(codes, query, 4, valid=valid)
    np.testing.assert_array_equal(idx, [1, 3])
    idx, scores = holo.topk_cosine(codes, query, 4, valid=np.zeros(5, np.bool_))
    assert idx.shape == scores.shape == (0,)


def test_masked_rows_with_nan_are_never_read():
    codes = np.ones((4, 3), dtype=np.float32)
    codes[2] = np.nan
    valid = np.array([1, 1, 0, 1], dtype=np.bool_)
    idx, _ = holo.topk_cosine(codes, np.ones(3, np.float32), 4, valid=valid)
    np.testing.assert_array_equal(idx, [0, 1, 3])


# ------------------------------------------------------------------ batch


@pytest.mark.parametrize("nq", [1, 3, 4, 9])
@pytest.mark.parametrize("normalized", [False, True])
def test_batch_is_bit_identical_to_single_queries(tiny_blocks, nq, normalized):
    rng = np.random.default_rng(nq)
    codes = _unit_rows(rng, 600, 20) if normalized else _random_codes(rng, 600, 20, (5, 6))
    queries = rng.standard_normal((nq, 20), dtype=np.float32)
    valid = rng.random(600) < 0.8
    bi, bs = holo.topk_cosine_batch(codes, queries, 7, normalized=normalized, valid=valid)
    assert bi.shape == bs.shape == (nq, 7)
    for q in range(nq):
        si, ss = holo.topk_cosine(codes, queries[q], 7, normalized=normalized, valid=valid)
        np.testing.assert_array_equal(bi[q], si)
        np.testing.assert_array_equal(bs[q], ss)
        _assert_same((si, ss), naive.topk_cosine(codes, queries[q], 7, normalized, valid))


# ------------------------------------------------------------------ properties


@settings(deadline=None, max_examples=60)
@given(
    m=st.integers(1, 60),
    d=st.integers(1, 12),
    k=st.integers(1, 70),
    seed=st.integers(0, 2**32 - 1),
    small_ints=st.booleans(),
)
def test_result_is_a_valid_topk_under_reference_scores(m, d, k, seed, small_ints):
    # Structured codes (small integers) create many exact and near ties; the
    # kernel must return a top-k that is correct up to float64 rounding: scores
    # sorted, each equal to the reference score of its row, and no row left out
    # that beats the k-th score by more than rounding.
    rng = np.random.default_rng(seed)
    if small_ints:
        codes = rng.integers(-2, 3, (m, d)).astype(np.float32)
        query = rng.integers(-2, 3, d).astype(np.float32)
        if not query.any():
            query[0] = 1.0
    else:
        codes = rng.standard_normal((m, d), dtype=np.float32)
        query = rng.standard_normal(d, dtype=np.float32)
    idx, scores = holo.topk_cosine(codes, query, k)
    ref = naive.cosine_scores(codes, query)
    assert idx.shape == (min(k, m),)
    assert len(set(idx.tolist())) == idx.size
    np.testing.assert_allclose(scores, ref[idx], rtol=0, atol=1e-12)
    assert np.all(np.diff(scores) <= 0)
    assert np.all(np.abs(scores) <= 1 + 1e-12)
    left_out = np.setdiff1d(np.arange(m), idx)
    if left_out.size:
        assert ref[left_out].max() <= scores[-1] + 1e-12
    # Equal scores (bitwise) must come in index order.
    for a in range(idx.size - 1):
        if scores[a] == scores[a + 1]:
            assert idx[a] < idx[a + 1]


# ------------------------------------------------------------------ validation


def test_rejects_float64_codes_naming_codes():
    with pytest.raises(TypeError, match="codes"):
        holo.topk_cosine(np.ones((3, 4)), np.ones(4, np.float32), 1)


def test_rejects_bad_query_and_k():
    codes = np.ones((3, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="query"):
        holo.topk_cosine(codes, np.ones(5, np.float32), 1)
    with pytest.raises(TypeError, match="query"):
        holo.topk_cosine(codes, np.ones(4), 1)
    with pytest.raises(ValueError, match="query"):
        holo.topk_cosine(codes, np.array([1, np.nan, 0, 0], np.float32), 1)
    with pytest.raises(ValueError, match="query"):
        holo.topk_cosine(codes, np.array([1, np.inf, 0, 0], np.float32), 1)
    with pytest.raises(ValueError, match="query"):
        holo.topk_cosine(codes, np.zeros(4, np.float32), 1)
    for bad_k in (0, -3):
        with pytest.raises(ValueError, match="k"):
            holo.topk_cosine(codes, np.ones(4, np.float32), bad_k)
    with pytest.raises(TypeError, match="k"):
        holo.topk_cosine(codes, np.ones(4, np.float32), 2.0)


def test_rejects_bad_codes_layout():
    with pytest.raises(ValueError, match="codes"):
        holo.topk_cosine(np.ones((4, 6), np.float32)[:, ::2], np.ones(3, np.float32), 1)
    with pytest.raises(ValueError, match="codes"):
        holo.topk_cosine(np.ones(4, np.float32), np.ones(4, np.float32), 1)


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_codes_raise_naming_the_row(tiny_blocks, normalized, bad):
    rng = np.random.default_rng(1)
    codes = _random_codes(rng, 200, 8)
    codes[123, 5] = bad
    with pytest.raises(ValueError, match=r"codes.*row 123"):
        holo.topk_cosine(codes, rng.standard_normal(8, dtype=np.float32), 3, normalized=normalized)


def test_rejects_bad_valid_mask():
    codes = np.ones((3, 4), dtype=np.float32)
    query = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="valid"):
        holo.topk_cosine(codes, query, 1, valid=np.ones(3, np.int64))
    with pytest.raises(ValueError, match="valid"):
        holo.topk_cosine(codes, query, 1, valid=np.ones(4, np.bool_))


def test_batch_validation():
    codes = np.ones((3, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="queries"):
        holo.topk_cosine_batch(codes, np.ones((2, 5), np.float32), 1)
    with pytest.raises(ValueError, match="queries row 1"):
        holo.topk_cosine_batch(codes, np.array([[1, 0, 0, 0], [0, 0, 0, 0]], np.float32), 1)
    with pytest.raises(TypeError, match="codes"):
        holo.topk_cosine_batch(codes.astype(np.float64), np.ones((2, 4), np.float32), 1)


# ------------------------------------------------------------------ norms


def test_row_norms_and_normalize_rows():
    rng = np.random.default_rng(8)
    codes = _random_codes(rng, 300, 10, zero_rows=(4,))
    np.testing.assert_allclose(holo.row_norms(codes), naive.row_norms(codes), rtol=1e-14)
    unit = holo.normalize_rows(codes)
    norms = naive.row_norms(unit)
    assert norms[4] == 0.0
    np.testing.assert_allclose(np.delete(norms, 4), 1.0, atol=1e-6)
    np.testing.assert_allclose(unit * holo.row_norms(codes)[:, None], codes, rtol=1e-6, atol=0)
    in_place = codes.copy()
    assert holo.normalize_rows(in_place, out=in_place) is in_place
    np.testing.assert_array_equal(in_place, unit)


def test_norm_helpers_validate():
    bad = np.ones((3, 4), np.float32)
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"codes.*row 1"):
        holo.row_norms(bad)
    with pytest.raises(ValueError, match="codes"):
        holo.normalize_rows(bad)
    with pytest.raises(TypeError, match="out"):
        holo.normalize_rows(np.ones((3, 4), np.float32), out=np.ones((3, 4)))
    with pytest.raises(ValueError, match="out"):
        holo.normalize_rows(np.ones((3, 4), np.float32), out=np.ones((4, 3), np.float32))


# ------------------------------------------------------------------ picture


def test_interference_grid_matches_naive_loop():
    rng = np.random.default_rng(12)
    primes = np.array([2, 3, 5, 7, 11, 13, 17, 19, 23, 29], dtype=np.int64)
    state = rng.standard_normal(10) + 1j * rng.standard_normal(10)
    state /= np.linalg.norm(state)
    got = interference.interference_grid(state, primes)
    want = naive.interference_grid(state, primes)
    assert got.shape == (32, 32)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # |H(0, 0)|² = |Σ α_p|² (every phase is zero at the origin).
    assert got[0, 0] == pytest.approx(abs(state.sum()) ** 2, rel=1e-12)
    assert interference.interference_grid(state, primes, size=5).shape == (5, 5)


def test_interference_grid_validates():
    with pytest.raises(TypeError, match="prime_state"):
        interference.interference_grid(np.ones(2), np.array([2, 3], np.int64))
    with pytest.raises(ValueError, match="primes"):
        interference.interference_grid(np.ones(2, np.complex128), np.array([2, 3, 5], np.int64))
    with pytest.raises(ValueError, match="primes"):
        interference.interference_grid(np.ones(2, np.complex128), np.array([1, 3], np.int64))


def test_warmup_runs():
    holo._warmup()
    assert math.isfinite(
        holo.topk_cosine(np.ones((1, 1), np.float32), np.ones(1, np.float32), 1)[1][0]
    )


def test_the_serial_and_the_parallel_scan_agree_block_for_block():
    # One block takes the serial scan (no thread pool to wake for a small memory); the
    # two kernels must give the same heaps on the same blocks, ties and all.
    from sentient_kernels import holographic as hk

    rng = np.random.default_rng(7)
    m, d, k = 3 * hk._MIN_BLOCK_ROWS + 5, 8, 10
    codes = rng.standard_normal((m, d)).astype(np.float32)
    codes[100] = codes[5000] = codes[1]  # planted ties across blocks
    queries = rng.standard_normal((2, d)).astype(np.float32)
    valid = (rng.random(m) > 0.1).astype(np.uint8)
    nblocks = -(-m // hk._MIN_BLOCK_ROWS)
    out = []
    for parallel in (True, False):
        heap_s = np.empty((2, nblocks, k))
        heap_i = np.empty((2, nblocks, k), dtype=np.int64)
        heap_n = np.empty(nblocks, dtype=np.int64)
        bad = np.empty(nblocks, dtype=np.int64)
        if parallel:
            hk._scan_topk(
                codes, queries, False, True, valid, hk._MIN_BLOCK_ROWS, heap_s, heap_i, heap_n, bad
            )
        else:  # block by block, as the one-block path calls it
            prepared = hk._prepare_queries(queries)
            for blk in range(nblocks):
                start, stop = blk * hk._MIN_BLOCK_ROWS, min(m, (blk + 1) * hk._MIN_BLOCK_ROWS)
                heap_n[blk], bad[blk] = hk._scan_block(
                    codes, queries, prepared, False, True, valid, start, stop, blk, heap_s, heap_i
                )
        out.append((heap_s, heap_i, heap_n, bad))
    (ps, pi, pn, pbad), (ss, si, sn, sbad) = out
    assert np.array_equal(pn, sn) and np.array_equal(pbad, sbad)
    for blk, fill in enumerate(pn.tolist()):  # a heap's unfilled slots are never read
        assert np.array_equal(ps[:, blk, :fill], ss[:, blk, :fill])
        assert np.array_equal(pi[:, blk, :fill], si[:, blk, :fill])
    # Through the public function: one block (serial) equals the naive top-k.
    small = codes[: hk._MIN_BLOCK_ROWS]
    ids, scores = hk.topk_cosine(small, queries[0], k)
    sims = (small.astype(np.float64) @ queries[0]) / (
        np.linalg.norm(small.astype(np.float64), axis=1) * np.linalg.norm(queries[0])
    )
    want = sorted(range(small.shape[0]), key=lambda i: (-sims[i], i))[:k]
    assert ids.tolist() == want
    assert np.allclose(scores, sims[want], atol=1e-6)


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_one_block_single_dispatch_equals_the_general_search(normalized, masked):
    # A small memory takes one dispatch (_topk_into); it must give the general
    # search's ids and scores exactly, ties and masks included.
    rng = np.random.default_rng(11)
    for m in (1, 9, 300, holo._MIN_BLOCK_ROWS):
        codes = _unit_rows(rng, m, 32) if normalized else _random_codes(rng, m, 32)
        if m > 8:
            codes[m // 2] = codes[m // 3] = codes[1]  # planted exact ties
        valid = (rng.random(m) > 0.2).astype(np.uint8) if masked else None
        for _ in range(20):
            q = rng.standard_normal(32).astype(np.float32)
            k = int(rng.integers(1, 12))
            got = holo.topk_cosine(codes, q, k, normalized=normalized, valid=valid)
            want = holo._search(codes, q.reshape(1, 32), k, normalized, valid)
            np.testing.assert_array_equal(got[0], want[0][0])
            np.testing.assert_array_equal(got[1], want[1][0])
            ref = naive.topk_cosine(codes, q, k, normalized=normalized, valid=valid)
            np.testing.assert_array_equal(got[0], ref[0])


def test_one_block_non_finite_row_is_still_named():
    codes = np.ones((50, 4), dtype=np.float32)
    codes[17, 2] = np.inf
    with pytest.raises(ValueError, match="row 17"):
        holo.topk_cosine(codes, np.ones(4, dtype=np.float32), 3)


@pytest.mark.parametrize("normalized", [False, True])
def test_one_block_groups_of_four_under_every_mask(normalized):
    # The one-block kernel estimates four valid rows at a time; every mask of a few
    # rows (short last groups, gaps, a group spanning masked rows) must give the
    # general search's answer, which must rank as the reference does.
    rng = np.random.default_rng(21)
    for m in range(1, 10):
        codes = _unit_rows(rng, m, 12) if normalized else _random_codes(rng, m, 12)
        codes[m - 1] = codes[0]  # a tie between the first and the last group
        q = rng.standard_normal(12).astype(np.float32)
        for bits in range(1 << m):
            valid = np.array([(bits >> i) & 1 for i in range(m)], dtype=np.uint8)
            for k in (1, 3, m + 1):
                got = holo.topk_cosine(codes, q, k, normalized=normalized, valid=valid)
                want = holo._search(codes, q.reshape(1, 12), k, normalized, valid)
                np.testing.assert_array_equal(got[0], want[0][0])
                np.testing.assert_array_equal(got[1], want[1][0])
                ref = naive.topk_cosine(codes, q, k, normalized=normalized, valid=valid)
                np.testing.assert_array_equal(got[0], ref[0])


def test_one_block_extreme_rows_inside_a_group_and_a_frozen_query():
    rng = np.random.default_rng(8)
    codes = _random_codes(rng, 1001, 32)
    codes[::3] *= np.float32(1e25)  # each group of four mixes scales
    codes[1::3] *= np.float32(1e-25)
    codes[500] = 0.0
    query = rng.standard_normal(32, dtype=np.float32)
    query.setflags(write=False)
    for k in (1, 10, 400):
        got = holo.topk_cosine(codes, query, k)
        _assert_same(got, naive.topk_cosine(codes, query, k))
        want = holo._search(codes, query.reshape(1, 32), k, False, None)
        np.testing.assert_array_equal(got[1], want[1][0])


def test_one_block_bad_row_after_masked_rows_and_bad_queries():
    codes = np.ones((30, 4), dtype=np.float32)
    codes[5, 1] = np.nan  # masked: never read
    codes[21, 0] = -np.inf
    valid = np.ones(30, dtype=np.uint8)
    valid[3:9] = 0
    with pytest.raises(ValueError, match="row 21"):
        holo.topk_cosine(codes, np.ones(4, dtype=np.float32), 3, valid=valid)
    valid[21] = 0
    ids, _ = holo.topk_cosine(codes, np.ones(4, dtype=np.float32), 30, valid=valid)
    assert ids.tolist() == [i for i in range(30) if valid[i]]
    # The kernel checks the query's values (status -2); the wrapper names them.
    for q, msg in ((np.zeros(4), "all zeros"), ([1, np.nan, 0, 0], "non-finite")):
        with pytest.raises(ValueError, match=msg):
            holo.topk_cosine(codes, np.array(q, np.float32), 3, valid=valid)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_one_block_near_ties_need_the_screen_margin(seed):
    # One block (the serial kernel): rows ~1e-6 apart, so float32 estimates order
    # them wrongly and only the margin (the estimate's worst-case rounding error)
    # keeps the true top rows from being screened out before their exact score.
    rng = np.random.default_rng(seed)
    d = 256
    base = rng.standard_normal(d)
    codes = (base + 1e-6 * rng.standard_normal((holo._MIN_BLOCK_ROWS, d))).astype(np.float32)
    query = (base + 0.5 * rng.standard_normal(d)).astype(np.float32)
    unit = holo.normalize_rows(codes)
    want = naive.topk_cosine(codes, query, 100)
    want_unit = naive.topk_cosine(unit, query, 100, normalized=True)
    for k in (1, 10, 100):
        _assert_same(holo.topk_cosine(codes, query, k), (want[0][:k], want[1][:k]))
        _assert_same(
            holo.topk_cosine(unit, query, k, normalized=True),
            (want_unit[0][:k], want_unit[1][:k]),
        )
