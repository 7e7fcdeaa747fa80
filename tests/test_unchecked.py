"""kernels.unchecked: the raw kernels behave as its docstring says."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

from kernels import prsc, sedenion, smf, text, tick, unchecked
from kernels.checks import count_finite

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
