"""sentient_kernels.unchecked: the raw kernels behave as its docstring says."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

from sentient_kernels import holographic, prsc, sedenion, smf, text, tick, unchecked
from sentient_kernels.checks import count_finite
from tests import naive

RNG = np.random.default_rng(7)
A = RNG.standard_normal(16)
B = RNG.standard_normal(16)
DECAY = 1.0 - prsc.DEFAULT_DAMPING * prsc.DEFAULT_DT


def test_every_name_is_a_numba_dispatcher_documented_in_the_module():
    for name in unchecked.__all__:
        assert isinstance(getattr(unchecked, name), CPUDispatcher), name
        assert f"\n{name}(" in unchecked.__doc__, name


def test_they_are_the_kernels_the_wrappers_run():
    assert unchecked.sedenion_mul is sedenion._mul_one
    assert unchecked.smf_update is smf._update_phase
    assert unchecked.prsc_run is prsc._tick_loop_serial
    assert unchecked.run_ticks is tick._run_ticks
    assert unchecked.text_encode is text._encode_kernel
    assert unchecked.holographic_topk_cosine is holographic._topk_into


def test_sedenion_mul_status():
    out = np.empty(16)
    assert unchecked.sedenion_mul(A, B, out) == 0
    np.testing.assert_array_equal(out, sedenion.mul(A, B))
    bad = A.copy()
    bad[3] = np.inf
    assert unchecked.sedenion_mul(bad, B, out) == 1
    untouched = np.full(16, 5.0)
    assert unchecked.sedenion_mul(A[:8].copy(), B, untouched) == 2
    assert (untouched == 5.0).all()
    rows = np.empty((2, 16))
    pairs = np.stack([A, bad])
    assert unchecked.sedenion_mul_rows(pairs, np.stack([B, B]), rows) == 1
    np.testing.assert_array_equal(rows[0], sedenion.mul(A, B))


def test_smf_update_status_leaves_out_alone_on_bad_input():
    bank = prsc.init_state(16, seed=1)
    s = smf.normalize(A)
    out = np.empty(16)
    args = (0.1, out, smf.EPS, smf.ACTIVE_AMPLITUDE)
    assert unchecked.smf_update(s, bank.amplitude, bank.phase, *args) == 0
    np.testing.assert_array_equal(out, smf.update(s, bank.amplitude, bank.phase))
    out[:] = 9.0
    assert unchecked.smf_update(s, bank.amplitude, bank.phase[:-1].copy(), *args) == 1
    assert unchecked.smf_update(s[:8].copy(), bank.amplitude, bank.phase, *args) == 1
    nan_phase = bank.phase.copy()
    nan_phase[0] = np.nan
    assert unchecked.smf_update(s, bank.amplitude, nan_phase, *args) == 2
    assert (out == 9.0).all()


def test_smf_similarity_statuses():
    assert unchecked.smf_similarity(A, B, smf.EPS) == smf.similarity_pair(A, B)
    assert np.isnan(unchecked.smf_similarity(A, np.full(16, np.nan), smf.EPS))
    assert np.isnan(unchecked.smf_similarity(A[:4].copy(), B, smf.EPS))
    rows = np.stack([B, A, B])
    out = np.empty(3)
    assert unchecked.smf_similarity_rows(A, rows, out, smf.EPS) == 0
    np.testing.assert_array_equal(out, smf.similarity(A, rows))
    rows[1, 5] = np.inf
    assert unchecked.smf_similarity_rows(A, rows, out, smf.EPS) == 1
    assert unchecked.smf_similarity_rows(np.zeros(16), rows, out, smf.EPS) == -2
    assert unchecked.smf_similarity_rows(A, rows, np.empty(2), smf.EPS) == -1
    assert unchecked.smf_similarity_rows(np.full(16, np.nan), rows, out, smf.EPS) == -1


def test_prsc_run_and_run_ticks_are_bit_identical_to_the_wrappers():
    mine, theirs = prsc.init_state(100, seed=4), prsc.init_state(100, seed=4)
    unchecked.prsc_run(*mine[:3], 25, prsc.DEFAULT_DT, prsc.DEFAULT_COUPLING, DECAY)
    prsc.run(theirs, 25)
    for x, y in zip(mine, theirs, strict=True):
        np.testing.assert_array_equal(x, y)
    s_mine, s_theirs = smf.initial(), smf.initial()
    coh, ent = np.empty(10), np.empty(10)
    unchecked.run_ticks(
        *mine[:3], s_mine, 10, prsc.DEFAULT_DT, prsc.DEFAULT_COUPLING, DECAY, 0.1, coh, ent
    )
    coh2, ent2 = np.empty(10), np.empty(10)
    tick.run_ticks(theirs, s_theirs, 10, coherence_out=coh2, entropy_out=ent2)
    np.testing.assert_array_equal(s_mine, s_theirs)
    np.testing.assert_array_equal(coh, coh2)
    np.testing.assert_array_equal(ent, ent2)


def test_other_oscillator_kernels_match_the_wrappers():
    bank = prsc.init_state(32, seed=2)
    assert unchecked.prsc_coherence(bank.phase, bank.amplitude) == prsc.coherence(
        bank.phase, bank.amplitude
    )
    np.testing.assert_array_equal(
        unchecked.prsc_prime_state(bank.phase, bank.amplitude, prsc.ZERO_NORM),
        prsc.prime_state(bank),
    )
    other = prsc.PrscState(*(a.copy() for a in bank))
    idx = np.array([3, 0, 3], dtype=np.int64)
    amounts = np.array([0.2, 0.5, 0.1])
    targets = np.array([1.0, 2.0, 3.0])
    unchecked.prsc_excite(bank.phase, bank.amplitude, idx, amounts, targets, 0.5, True)
    prsc.excite(other, idx, amounts, target_phase=targets, pull=0.5)
    np.testing.assert_array_equal(bank.phase, other.phase)
    np.testing.assert_array_equal(bank.amplitude, other.amplitude)
    s = A.copy()
    unchecked.smf_normalize(s, s, smf.EPS)
    np.testing.assert_array_equal(s, smf.normalize(A))
    assert unchecked.smf_entropy(s, smf.EPS) == smf.entropy(s)


@pytest.mark.parametrize("n", [0, 1, 7, 16, 64, 1000])
def test_count_finite(n):
    x = RNG.standard_normal(n)
    assert count_finite(x) == n
    if n:
        x[::3] = np.nan
        x[1::5] = -np.inf
        assert count_finite(x) == int(np.isfinite(x).sum())
        x[:] = np.finfo(np.float64).max
        assert count_finite(x) == n


# ------------------------------------------------------------ holographic top-k from @njit

NO_MASK = np.empty(0, dtype=np.uint8)


@numba.njit
def _topk_each(codes, queries, k, normalized, has_mask, valid, ids, scores):
    """What an embedder writes: the top-k of every query inside its own compiled loop."""
    counts = np.empty(queries.shape[0], dtype=np.int64)
    for q in range(queries.shape[0]):
        counts[q] = unchecked.holographic_topk_cosine(
            codes, queries[q], k, normalized, has_mask, valid, ids[q], scores[q]
        )
    return counts


@pytest.mark.parametrize(
    ("m", "d", "k"), [(1, 8, 1), (1, 8, 5), (7, 3, 4), (7, 3, 20), (300, 16, 10), (3000, 64, 25)]
)
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_holographic_topk_from_njit_matches_the_wrapper_and_the_reference(
    m, d, k, normalized, masked
):
    rng = np.random.default_rng(m * 100 + d * 10 + k + 7 * normalized + 3 * masked)
    codes = rng.standard_normal((m, d), dtype=np.float32)
    tied = np.sort(rng.choice(m, m // 3, replace=False)) if m > 3 else np.arange(0)
    codes[tied] = codes[m // 2]  # identical rows: bit-identical scores, lower row first
    if normalized:
        codes = holographic.normalize_rows(codes)
    queries = rng.standard_normal((4, d), dtype=np.float32)
    queries[0] = codes[m // 2]  # the tied rows share the top score
    valid = (rng.random(m) < 0.7).astype(np.uint8) if masked else None
    ids = np.full((4, k), -1, dtype=np.int64)
    scores = np.full((4, k), np.nan)
    counts = _topk_each(
        codes, queries, k, normalized, masked, NO_MASK if valid is None else valid, ids, scores
    )
    for q in range(4):
        want_ids, want_scores = holographic.topk_cosine(
            codes, queries[q], k, normalized=normalized, valid=valid
        )
        n = counts[q]
        assert n == want_ids.size == min(k, m if valid is None else int(valid.sum()))
        np.testing.assert_array_equal(ids[q, :n], want_ids)
        np.testing.assert_array_equal(scores[q, :n], want_scores)
        assert (ids[q, n:] == -1).all()  # nothing written past the count
        ref_ids, ref_scores = naive.holographic.topk_cosine(codes, queries[q], k, normalized, valid)
        np.testing.assert_array_equal(ids[q, :n], ref_ids)
        np.testing.assert_allclose(scores[q, :n], ref_scores, rtol=0, atol=1e-12)
    if m > 3 and not masked:  # the ties were really exercised: the lowest tied rows lead
        lead = np.union1d(tied, [m // 2])[: min(k, tied.size + 1)]
        np.testing.assert_array_equal(ids[0, : lead.size], lead)


def test_holographic_topk_statuses_and_layouts():
    rng = np.random.default_rng(21)
    codes = rng.standard_normal((5, 4), dtype=np.float32)
    query = rng.standard_normal(4, dtype=np.float32)
    topk = unchecked.holographic_topk_cosine
    ids, scores = np.full(3, -1, dtype=np.int64), np.full(3, 9.0)
    # -1: wrong query length, short mask, outputs shorter than the result.
    assert topk(codes, query[:3].copy(), 3, False, False, NO_MASK, ids, scores) == -1
    assert topk(codes, query, 3, False, True, np.ones(4, np.uint8), ids, scores) == -1
    assert topk(codes, query, 4, False, False, NO_MASK, ids, scores) == -1
    # -2: a query whose cosine is undefined.
    assert topk(codes, np.zeros(4, np.float32), 3, False, False, NO_MASK, ids, scores) == -2
    nan_query = query.copy()
    nan_query[1] = np.nan
    assert topk(codes, nan_query, 3, False, False, NO_MASK, ids, scores) == -2
    assert (ids == -1).all() and (scores == 9.0).all()
    # Nothing to return.
    assert topk(codes, query, 0, False, False, NO_MASK, ids, scores) == 0
    assert topk(codes[:0], query, 3, False, False, NO_MASK, ids, scores) == 0
    # -3: a counted row holds inf; masked out, it is not read.
    bad = codes.copy()
    bad[2, 1] = np.inf
    assert topk(bad, query, 3, False, False, NO_MASK, ids, scores) == -3
    assert (ids == -1).all() and (scores == 9.0).all()
    keep = np.array([True, True, False, True, True])
    assert topk(bad, query, 3, False, True, keep, ids, scores) == 3
    want = holographic.topk_cosine(codes, query, 3, valid=keep)
    np.testing.assert_array_equal(ids, want[0])
    np.testing.assert_array_equal(scores, want[1])
    # Any query layout: a strided view gives the same answer.
    strided = np.repeat(query, 2)[::2]
    assert topk(codes, strided, 3, False, False, NO_MASK, ids, scores) == 3
    np.testing.assert_array_equal(ids, holographic.topk_cosine(codes, query, 3)[0])
