"""sentient_kernels.smf against the pure-Python SPEC §1 reference, branch by branch."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sentient_kernels import smf, smf_delta
from tests.naive import smf as naive

DIM = 16
TWO_PI = 2.0 * math.pi


def oscillators(amplitude, phase=None):
    amplitude = np.asarray(amplitude, dtype=np.float64)
    if phase is None:
        phase = np.zeros_like(amplitude)
    return amplitude, np.asarray(phase, dtype=np.float64)


def assert_delta_matches_reference(amplitude, phase, atol=1e-14):
    got = smf.delta(amplitude, phase)
    want = naive.delta(amplitude, phase)
    np.testing.assert_allclose(got, want, rtol=0.0, atol=atol)
    trig = smf.delta_trig(amplitude, np.cos(phase), np.sin(phase))
    np.testing.assert_allclose(trig, want, rtol=0.0, atol=atol)
    return got


# --------------------------------------------------------------------------- basics


def test_axes_and_initial_state():
    assert len(smf.AXES) == DIM == len(set(smf.AXES))
    assert smf.AXES[0] == "coherence" and smf.AXES[7] == "wisdom"
    assert smf.AXES[-1] == "consciousness"
    s = smf.initial()
    np.testing.assert_array_equal(s, np.eye(DIM)[0])
    s[0] = 5.0
    assert smf.initial()[0] == 1.0


def test_normalize_matches_reference_and_keeps_zero():
    rng = np.random.default_rng(0)
    for scale in (1e-12, 1e-9, 1.0, 1e8):
        s = rng.standard_normal(DIM) * scale
        np.testing.assert_allclose(smf.normalize(s), naive.normalize(s), rtol=1e-14, atol=0.0)
    np.testing.assert_array_equal(smf.normalize(np.zeros(DIM)), np.zeros(DIM))
    # Below the floor the vector is divided by 1e-10, not blown up to unit length.
    tiny = np.full(DIM, 1e-13)
    np.testing.assert_allclose(smf.normalize(tiny), tiny / 1e-10, rtol=1e-14)


def test_entropy_matches_reference_and_edge_cases():
    rng = np.random.default_rng(1)
    for _ in range(20):
        s = rng.standard_normal(DIM) * (rng.random(DIM) < 0.7)
        assert smf.entropy(s) == pytest.approx(naive.entropy(s), abs=1e-14)
    assert smf.entropy(np.zeros(DIM)) == 0.0
    assert smf.entropy(np.full(DIM, 1e-12)) == 0.0
    assert smf.entropy(smf.initial()) == 0.0
    assert smf.entropy(np.full(DIM, -0.25)) == pytest.approx(math.log(DIM), rel=1e-14)
    # π_k ≤ 1e-10 are left out of the sum: only −π_0 ln π_0 ≈ 1e-11 remains
    # (with π_1 the sum would be ≈ 2.6e-10).
    s = smf.initial()
    s[1] = 1e-11
    assert smf.entropy(s) == pytest.approx(naive.entropy(s), rel=1e-6)
    assert 0.0 < smf.entropy(s) < 2e-11


def test_similarity_matches_reference():
    rng = np.random.default_rng(2)
    s = rng.standard_normal(DIM)
    others = rng.standard_normal((300, DIM))
    others[5] = 0.0
    others[6] = 1e-12
    others[7] = -3.0 * s
    got = smf.similarity(s, others)
    want = [naive.similarity(s, row) for row in others]
    np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-14)
    assert got[5] == got[6] == 0.0
    assert got[7] == pytest.approx(-1.0, abs=1e-15)


def test_similarity_parallel_path_matches_reference():
    m = 10_000
    assert m >= smf._PARALLEL_MIN_ROWS
    rng = np.random.default_rng(12)
    s = rng.standard_normal(DIM)
    others = rng.standard_normal((m, DIM))
    others[::101] = 0.0
    want = [naive.similarity(s, row) for row in others]
    np.testing.assert_allclose(smf.similarity(s, others), want, rtol=0.0, atol=1e-14)


def test_similarity_one_row_empty_zero_field_and_out():
    rng = np.random.default_rng(3)
    s = rng.standard_normal(DIM)
    row = rng.standard_normal((1, DIM))
    got = smf.similarity(s, row)
    assert got.shape == (1,)
    assert got[0] == pytest.approx(naive.similarity(s, row[0]), abs=1e-15)
    assert smf.similarity(s, np.zeros((0, DIM))).shape == (0,)
    np.testing.assert_array_equal(smf.similarity(np.zeros(DIM), row), [0.0])
    out = np.empty(1)
    assert smf.similarity(s, row, out=out) is out
    assert smf.similarity_pair(s, row[0]) == pytest.approx(got[0], abs=1e-15)
    assert smf.similarity_pair(np.zeros(DIM), s) == 0.0


# --------------------------------------------------------------------------- Δ, branch by branch


def test_delta_without_oscillators_is_tenth_of_e0():
    got = assert_delta_matches_reference(np.zeros(0), np.zeros(0))
    np.testing.assert_array_equal(got, 0.1 * np.eye(DIM)[0])


def test_delta_full_synchrony_r_above_0_9():
    amp, ph = oscillators([0.5] * 8, [1.3] * 8)
    d = assert_delta_matches_reference(amp, ph)
    assert d[0] == pytest.approx(0.3, abs=1e-15)  # R = 1
    assert d[8] == 0.2  # R > 0.9
    assert d[10] == 0.2  # R > 0.7 and σ² = 0 < 0.1
    assert d[1] == 0.2 and d[2] == 0.0 and d[4] == 0.0  # σ² = 0


def test_delta_r_between_0_7_and_0_9_with_low_variance():
    # Half the phases at 0, half at θ: R = cos(θ/2) = 0.8.
    theta = 2.0 * math.acos(0.8)
    amp, ph = oscillators([0.5] * 8, [0.0] * 4 + [theta] * 4)
    d = assert_delta_matches_reference(amp, ph)
    assert d[0] == pytest.approx(0.3 * 0.8, abs=1e-14)
    assert d[8] == 0.0
    assert d[10] == 0.2


def test_delta_r_above_0_7_with_high_variance():
    amp, ph = oscillators([0.2, 1.2] * 4, [2.0] * 8)  # σ² = 0.25
    d = assert_delta_matches_reference(amp, ph)
    assert d[2] == pytest.approx(0.2 * 0.25, abs=1e-15)
    assert d[8] == 0.2
    assert d[10] == 0.0


def test_delta_no_active_oscillator():
    amp, ph = oscillators([0.05, 0.1, 0.02, 0.0], [0.0, 1.0, 2.0, 3.0])  # 0.1 is not > 0.1
    d = assert_delta_matches_reference(amp, ph)
    assert d[0] == d[3] == d[8] == d[10] == d[11] == d[14] == 0.0
    assert d[6] == 0.0


def test_delta_total_amplitude_threshold_is_strict():
    above = assert_delta_matches_reference(*oscillators([0.8] * 4, [0.0, 1.0, 2.0, 3.0]))
    assert above[12] == 0.2
    at = assert_delta_matches_reference(*oscillators([0.5] * 4, [0.0, 1.0, 2.0, 3.0]))
    assert at[12] == 0.05  # T = 0.5 N exactly
    below = assert_delta_matches_reference(*oscillators([0.3] * 4, [0.0, 1.0, 2.0, 3.0]))
    assert below[12] == 0.05


def test_delta_variance_clips_duality_stability_term():
    amp, ph = oscillators([0.0, 2.0, 0.0, 2.0], [0.0, 0.5, 1.0, 1.5])  # σ² = 1
    d = assert_delta_matches_reference(amp, ph)
    assert d[1] == 0.0
    assert d[2] == pytest.approx(0.2, abs=1e-15)


def test_delta_caps_on_structure_life_and_space():
    rng = np.random.default_rng(4)
    amp, ph = oscillators([0.5] * 64, rng.uniform(0, TWO_PI, 64))
    d = assert_delta_matches_reference(amp, ph)
    assert d[3] == pytest.approx(0.3, abs=1e-15)  # n_a = N: 0.3·n_a/N reaches its cap
    assert d[5] == 0.3  # 0.05·T = 1.6 capped
    assert d[14] == 0.2  # n_a = 64 ≥ 16 capped
    few = assert_delta_matches_reference(*oscillators([0.5] * 2 + [0.0] * 62, np.zeros(64)))
    assert few[3] == pytest.approx(0.3 * 2 / 64, abs=1e-15)
    assert few[5] == pytest.approx(0.05, abs=1e-15)
    assert few[14] == pytest.approx(0.2 * 2 / 16, abs=1e-15)


def test_delta_wisdom_term_clips_at_high_prime_entropy():
    # 64 equal amplitudes: H_ψ = 6 bits, 0.3 − 0.6 < 0.
    spread = assert_delta_matches_reference(*oscillators([0.2] * 64, np.zeros(64)))
    assert spread[7] == 0.0
    assert spread[15] == pytest.approx(0.2 * (spread[0] + spread[1]), abs=1e-15)
    # One oscillator carries everything: H_ψ = 0.
    single = assert_delta_matches_reference(*oscillators([0.7] + [0.0] * 63, np.zeros(64)))
    assert single[7] == pytest.approx(0.3, abs=1e-15)
    # Four equal amplitudes: H_ψ = 2 bits.
    four = assert_delta_matches_reference(*oscillators([0.3] * 4 + [0.0] * 4, np.zeros(8)))
    assert four[7] == pytest.approx(0.1, abs=1e-15)


def test_delta_all_zero_amplitudes():
    d = assert_delta_matches_reference(*oscillators([0.0] * 10, np.linspace(0, 6, 10)))
    assert d[7] == pytest.approx(0.3)  # H_ψ = 0 for a zero prime state
    assert d[0] == 0.0 and d[12] == 0.05


@pytest.mark.parametrize("seed", range(12))
def test_delta_random_states_match_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 5, 16, 64, 200]))
    amp = rng.uniform(0.0, rng.choice([0.05, 0.3, 1.0, 3.0]), n) * (rng.random(n) < 0.8)
    phase = rng.uniform(0.0, TWO_PI, n) if seed % 2 else rng.uniform(-50.0, 50.0, n)
    assert_delta_matches_reference(amp, phase, atol=1e-13)


def test_delta_with_huge_phases_and_negative_amplitudes():
    rng = np.random.default_rng(5)
    amp = rng.uniform(-1.0, 1.0, 40)
    phase = rng.uniform(-1e9, 1e9, 40)
    assert_delta_matches_reference(amp, phase, atol=1e-13)
    phase[:-1] = rng.uniform(0.0, TWO_PI, 39)  # only one phase beyond the fast range
    phase[-1] = 3e5
    assert_delta_matches_reference(amp, phase, atol=1e-13)


def test_delta_with_large_phases_in_the_fast_trig_range():
    # |φ| ≤ 1e5 takes the vectorised reduction inside the fast-math kernel: a
    # reassociated Cody–Waite step would cost ~1e-12 in R here.
    rng = np.random.default_rng(14)
    for _ in range(5):
        amp = rng.uniform(0.2, 1.0, 64)
        phase = rng.uniform(-1e5, 1e5, 64)
        assert np.abs(phase).max() <= 1e5
        assert_delta_matches_reference(amp, phase, atol=1e-15)


def test_delta_with_tiny_amplitudes_beside_large_ones():
    amp = np.array([0.9, 1e-160, 1e-200, 5e-324, 0.0, 0.3])
    assert_delta_matches_reference(amp, np.arange(6.0))


# --------------------------------------------------------------------------- vectorised elementary functions


def test_fast_sincos_is_accurate_over_the_phase_range():
    rng = np.random.default_rng(6)
    x = np.concatenate(
        [
            rng.uniform(0.0, TWO_PI, 20000),
            rng.uniform(-1e5, 1e5, 20000),
            np.arange(-2000, 2000) * (math.pi / 2),  # worst cancellation in the reduction
            [0.0, -0.0, 1e-300, 1e5, -1e5],
        ]
    )
    c = np.empty_like(x)
    s = np.empty_like(x)
    smf_delta._sincos(x, x.shape[0], c, s)
    assert np.abs(c - np.cos(x)).max() <= 2.3e-16
    assert np.abs(s - np.sin(x)).max() <= 2.3e-16
    big = np.array([1e5 + 1.0, 0.5, 1e300])
    c, s = np.empty(3), np.empty(3)
    smf_delta._sincos(big, 3, c, s)
    np.testing.assert_array_equal(c, np.cos(big))
    np.testing.assert_array_equal(s, np.sin(big))


def test_fast_log_is_accurate_on_probabilities():
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            rng.uniform(0.0, 1.0, 20000),
            10.0 ** rng.uniform(-300.0, 0.0, 20000),
            1.0 - rng.uniform(0.0, 1e-6, 1000),
            [1.0, 0.5, math.sqrt(2.0) / 2.0, np.nextafter(1.0, 2.0), 2.2250738585072014e-308],
        ]
    )
    x = np.maximum(x, 1e-300)
    out = np.empty_like(x)
    smf_delta._log_positive(x, x.shape[0], np.empty(x.shape[0], np.int64), np.empty_like(x), out)
    want = np.log(x)
    assert (np.abs(out - want) <= 2.0 * np.spacing(np.abs(want)) + 1e-300).all()


# --------------------------------------------------------------------------- updates


def test_update_matches_reference():
    rng = np.random.default_rng(8)
    s = smf.normalize(rng.standard_normal(DIM))
    for eta in (0.0, 0.1, 0.5, 1.0):
        amp = rng.uniform(0.0, 0.4, 64)
        phase = rng.uniform(0.0, TWO_PI, 64)
        want = naive.update(s, amp, phase, eta)
        np.testing.assert_allclose(smf.update(s, amp, phase, eta), want, rtol=0.0, atol=1e-14)
        trig = smf.update_trig(s, amp, np.cos(phase), np.sin(phase), eta)
        np.testing.assert_allclose(trig, want, rtol=0.0, atol=1e-14)


def test_update_eta_extremes():
    rng = np.random.default_rng(9)
    s = smf.normalize(rng.standard_normal(DIM))
    amp, phase = rng.uniform(0.0, 0.4, 16), rng.uniform(0.0, TWO_PI, 16)
    np.testing.assert_allclose(smf.update(s, amp, phase, 0.0), s, rtol=1e-15)
    d = naive.delta(amp, phase)
    np.testing.assert_allclose(smf.update(s, amp, phase, 1.0), d / np.linalg.norm(d), atol=1e-15)


def test_update_in_place_and_default_eta():
    rng = np.random.default_rng(10)
    s = smf.initial()
    amp, phase = rng.uniform(0.0, 0.4, 64), rng.uniform(0.0, TWO_PI, 64)
    want = naive.update(s, amp, phase, 0.1)
    assert smf.update(s, amp, phase, out=s) is s
    np.testing.assert_allclose(s, want, rtol=0.0, atol=1e-15)


def test_update_without_oscillators_pulls_toward_e0():
    s = smf.normalize(np.ones(DIM))
    got = smf.update(s, np.zeros(0), np.zeros(0))
    np.testing.assert_allclose(got, naive.update(s, [], []), rtol=0.0, atol=1e-15)
    assert got[0] > s[0]


@settings(deadline=None, max_examples=100)
@given(
    arrays(np.float64, DIM, elements=st.floats(-10.0, 10.0, allow_nan=False)),
    arrays(np.float64, 32, elements=st.floats(0.0, 2.0, allow_nan=False)),
    arrays(np.float64, 32, elements=st.floats(-10.0, 10.0, allow_nan=False)),
    st.floats(0.0, 1.0),
)
def test_update_agrees_with_reference_and_stays_unit(s, amp, phase, eta):
    got = smf.update(s, amp, phase, eta)
    want = naive.update(s, amp, phase, eta)
    np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-13)
    size = np.linalg.norm((1.0 - eta) * s + eta * naive.delta(amp, phase))
    if size > 1e-9:
        assert abs(np.linalg.norm(got) - 1.0) <= 1e-14


@pytest.mark.parametrize(("n_updates", "n"), [(1, 64), (60, 64), (25, 3), (5, 0)])
def test_update_batch_matches_reference_trajectory(n_updates, n):
    rng = np.random.default_rng(n_updates + n)
    s = smf.normalize(rng.standard_normal(DIM))
    amps = rng.uniform(0.0, 0.5, (n_updates, n))
    phases = rng.uniform(0.0, TWO_PI, (n_updates, n))
    want = naive.update_batch(s, amps, phases, 0.2)
    traj = np.empty((n_updates, DIM))
    final = smf.update_batch(s, amps, phases, 0.2, trajectory=traj)
    np.testing.assert_allclose(traj, want, rtol=0.0, atol=1e-13)
    np.testing.assert_array_equal(final, traj[-1])
    np.testing.assert_array_equal(smf.update_batch(s, amps, phases, 0.2), final)


def test_update_batch_equals_repeated_single_updates():
    rng = np.random.default_rng(11)
    amps = rng.uniform(0.0, 0.5, (40, 64))
    phases = rng.uniform(0.0, TWO_PI, (40, 64))
    s = smf.initial()
    for b in range(40):
        s = smf.update(s, amps[b], phases[b])
    np.testing.assert_allclose(smf.update_batch(smf.initial(), amps, phases), s, atol=1e-15)


def test_update_batch_without_updates_returns_a_copy():
    s = smf.normalize(np.arange(1.0, 17.0))
    got = smf.update_batch(s, np.zeros((0, 64)), np.zeros((0, 64)))
    np.testing.assert_array_equal(got, s)
    assert got is not s


# --------------------------------------------------------------------------- validation


def test_update_rejects_bad_arguments_naming_them():
    s, amp, ph = smf.initial(), np.full(8, 0.2), np.zeros(8)
    with pytest.raises(ValueError, match=r"^s "):
        smf.update(np.zeros(15), amp, ph)
    with pytest.raises(TypeError, match=r"^amplitude "):
        smf.update(s, amp.astype(np.float32), ph)
    with pytest.raises(ValueError, match=r"^phase "):
        smf.update(s, amp, np.zeros(7))
    with pytest.raises(ValueError, match=r"^phase "):
        smf.update(s, amp, np.full(8, np.nan))
    with pytest.raises(ValueError, match=r"^amplitude "):
        smf.update(s, np.zeros((2, 4)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"^eta "):
        smf.update(s, amp, ph, eta=1.5)
    with pytest.raises(TypeError, match=r"^eta "):
        smf.update(s, amp, ph, eta=None)
    with pytest.raises(ValueError, match=r"^out "):
        smf.update(s, amp, ph, out=np.empty(8))
    with pytest.raises(ValueError, match=r"^sin_phase "):
        smf.update_trig(s, amp, np.ones(8), np.full(8, np.inf))
    with pytest.raises(ValueError, match=r"^cos_phase "):
        smf.delta_trig(amp, np.ones(9), np.ones(8))


def test_update_batch_rejects_bad_arguments_naming_them():
    s, amps, phases = smf.initial(), np.full((4, 8), 0.2), np.zeros((4, 8))
    with pytest.raises(ValueError, match=r"^amplitudes "):
        smf.update_batch(s, np.zeros(8), np.zeros(8))
    with pytest.raises(ValueError, match=r"^phases "):
        smf.update_batch(s, amps, np.zeros((4, 7)))
    with pytest.raises(ValueError, match=r"^phases "):
        smf.update_batch(s, amps, np.asfortranarray(phases))
    with pytest.raises(ValueError, match=r"^trajectory "):
        smf.update_batch(s, amps, phases, trajectory=np.empty((3, DIM)))
    with pytest.raises(TypeError, match=r"^s "):
        smf.update_batch([1.0] * DIM, amps, phases)


@pytest.mark.parametrize("m", [5, 10_000])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("field", ["random", "zero"])
def test_similarity_finds_a_single_non_finite_entry(m, bad, field):
    # Checked inside the kernel pass; a zero field (all cosines 0) must not hide it.
    rng = np.random.default_rng(15)
    s = rng.standard_normal(DIM) if field == "random" else np.zeros(DIM)
    others = rng.standard_normal((m, DIM))
    others[m // 2, 3] = bad
    with pytest.raises(ValueError, match=r"^others contains 1 non-finite"):
        smf.similarity(s, others)


def test_similarity_with_s_having_zero_components_still_finds_inf():
    s = smf.initial()  # s_k = 0 for k ≥ 1: 0 · inf = NaN, still flagged
    others = np.ones((3, DIM))
    others[1, 5] = np.inf
    with pytest.raises(ValueError, match=r"^others "):
        smf.similarity(s, others)


def test_field_functions_reject_bad_arguments_naming_them():
    with pytest.raises(ValueError, match=r"^s "):
        smf.normalize(np.full(DIM, np.nan))
    with pytest.raises(TypeError, match=r"^s "):
        smf.entropy(np.zeros(DIM, dtype=np.float32))
    with pytest.raises(ValueError, match=r"^others "):
        smf.similarity(smf.initial(), np.zeros((3, 15)))
    with pytest.raises(ValueError, match=r"^out "):
        smf.similarity(smf.initial(), np.zeros((3, DIM)), out=np.empty(2))
    with pytest.raises(ValueError, match=r"^b "):
        smf.similarity_pair(smf.initial(), np.zeros(32)[::2])


def test_warmup_runs():
    smf._warmup()
