"""sentient_kernels.tick (fused PRSC tick + SMF update) against the unfused and pure-Python sequences."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_kernels import prsc, smf, tick
from sentient_kernels.prsc import PrscState
from tests.naive import tick as naive

TWO_PI = 2.0 * math.pi


def phase_gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a − b| along the circle."""
    return np.abs(np.mod(np.asarray(a) - np.asarray(b) + math.pi, TWO_PI) - math.pi)


def copy_state(state: PrscState) -> PrscState:
    return PrscState(*(x.copy() for x in state))


def lively_state(n: int, seed: int) -> PrscState:
    """A bank where many oscillators are active (A > 0.1), so every Δ branch matters."""
    state = prsc.init_state(n, seed=seed)
    rng = np.random.default_rng(seed + 1000)
    state.amplitude[:] = rng.uniform(0.0, 0.9, n)
    return state


def random_field(seed: int) -> np.ndarray:
    s = np.random.default_rng(seed).standard_normal(16)
    return s / np.linalg.norm(s)


def fused(state, s, steps, **kw):
    coherence = np.full(steps, np.nan)
    entropy = np.full(steps, np.nan)
    out = tick.run_ticks(state, s, steps, coherence_out=coherence, entropy_out=entropy, **kw)
    assert out is s
    return coherence, entropy


# --------------------------------------------------------------------------- agreement


@pytest.mark.parametrize("n", [1, 2, 7, 64, 1024, 1025, 2500])
def test_matches_unfused_public_sequence(n):
    state = lively_state(n, seed=n)
    s = random_field(n)
    ref_state, ref_s = copy_state(state), s.copy()
    steps = 120
    coherence, entropy = fused(state, s, steps)
    ref_coherence, ref_entropy = naive.run_ticks_unfused(ref_state, ref_s, steps)
    # The oscillator tick is prsc's own arithmetic: bit-identical.
    np.testing.assert_array_equal(state.phase, ref_state.phase)
    np.testing.assert_array_equal(state.amplitude, ref_state.amplitude)
    np.testing.assert_allclose(s, ref_s, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(coherence, ref_coherence, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(entropy, ref_entropy, rtol=0.0, atol=1e-12)


@pytest.mark.parametrize("n", [1, 3, 40])
def test_matches_pure_python_reference(n):
    state = lively_state(n, seed=10 + n)
    s = random_field(n)
    kw = {"dt": 0.03, "coupling": 2.0, "damping": 0.3, "eta": 0.25}
    phase, amp, ref_s, ref_coherence, ref_entropy = naive.run_ticks_naive(
        state.phase, state.amplitude, state.frequency, s, 60, **kw
    )
    coherence, entropy = fused(state, s, 60, **kw)
    assert phase_gap(state.phase, phase).max() <= 1e-12
    np.testing.assert_allclose(state.amplitude, amp, rtol=1e-14, atol=0.0)
    np.testing.assert_allclose(s, ref_s, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(coherence, ref_coherence, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(entropy, ref_entropy, rtol=0.0, atol=1e-12)


def test_synchronised_bank_drives_high_order_axes():
    # Identical oscillators, strong coupling, amplitudes high: R → 1 and the
    # thresholded axes (infinity: R > 0.9, truth: R > 0.7 and σ² < 0.1) switch on.
    n = 32
    state = PrscState(
        np.random.default_rng(3).uniform(0.0, 1.0, n),
        np.full(n, 0.6),
        np.ones(n),
        prsc.first_primes(n),
    )
    s = smf.initial()
    ref_state, ref_s = copy_state(state), s.copy()
    kw = {"coupling": 20.0, "damping": 0.0}
    fused(state, s, 400, **kw)
    naive.run_ticks_unfused(ref_state, ref_s, 400, **kw)
    np.testing.assert_allclose(s, ref_s, rtol=0.0, atol=1e-12)
    orientation = dict(zip(smf.AXES, s, strict=True))
    assert orientation["infinity"] > 0.1
    assert orientation["truth"] > 0.1


def test_several_calls_equal_one_call():
    a = lively_state(64, seed=4)
    b = copy_state(a)
    sa, sb = random_field(4), random_field(4)
    tick.run_ticks(a, sa, 300)
    for steps in (1, 99, 200):
        tick.run_ticks(b, sb, steps)
    np.testing.assert_array_equal(a.phase, b.phase)
    np.testing.assert_array_equal(a.amplitude, b.amplitude)
    np.testing.assert_allclose(sa, sb, rtol=0.0, atol=1e-15)


def test_short_record_holds_the_last_steps():
    a = lively_state(64, seed=5)
    b = copy_state(a)
    sa, sb = smf.initial(), smf.initial()
    full_c, full_e = fused(a, sa, 50)
    last_c = np.full(7, np.nan)
    last_e = np.full(3, np.nan)
    tick.run_ticks(b, sb, 50, coherence_out=last_c, entropy_out=last_e)
    np.testing.assert_array_equal(last_c, full_c[-7:])
    np.testing.assert_array_equal(last_e, full_e[-3:])
    np.testing.assert_array_equal(sa, sb)
    # Recording nothing does not change the dynamics.
    c = copy_state(lively_state(64, seed=5))
    sc = smf.initial()
    tick.run_ticks(c, sc, 50)
    np.testing.assert_array_equal(c.phase, a.phase)
    np.testing.assert_array_equal(sc, sa)


def test_steps_zero_is_noop():
    state = lively_state(16, seed=6)
    before = copy_state(state)
    s = random_field(6)
    s_before = s.copy()
    tick.run_ticks(state, s, 0, coherence_out=np.empty(0))
    np.testing.assert_array_equal(state.phase, before.phase)
    np.testing.assert_array_equal(s, s_before)


def test_empty_bank_pulls_field_toward_e0():
    state = prsc.init_state(0)
    s = random_field(7)
    ref = s.copy()
    coherence, entropy = fused(state, s, 5)
    for _ in range(5):
        ref = smf.update(ref, np.empty(0), np.empty(0))
    np.testing.assert_allclose(s, ref, rtol=0.0, atol=1e-15)
    np.testing.assert_array_equal(coherence, np.zeros(5))
    assert entropy[-1] == pytest.approx(smf.entropy(s), abs=1e-15)


@settings(deadline=None, max_examples=60)
@given(
    n=st.integers(1, 80),
    seed=st.integers(0, 2**32 - 1),
    steps=st.integers(1, 30),
    coupling=st.floats(-3.0, 3.0),
    eta=st.floats(0.0, 1.0),
)
def test_agrees_with_unfused_and_keeps_invariants(n, seed, steps, coupling, eta):
    state = lively_state(n, seed=seed % 10_000)
    s = random_field(seed % 997)
    ref_state, ref_s = copy_state(state), s.copy()
    coherence, entropy = fused(state, s, steps, coupling=coupling, eta=eta)
    ref_coherence, ref_entropy = naive.run_ticks_unfused(
        ref_state, ref_s, steps, coupling=coupling, eta=eta
    )
    np.testing.assert_array_equal(state.phase, ref_state.phase)
    np.testing.assert_allclose(s, ref_s, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(coherence, ref_coherence, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(entropy, ref_entropy, rtol=0.0, atol=1e-12)
    assert abs(np.linalg.norm(s) - 1.0) < 1e-12
    assert np.all((coherence >= 0.0) & (coherence <= 1.0 + 1e-15))
    assert np.all((entropy >= 0.0) & (entropy <= math.log(16) + 1e-12))
    assert np.all((state.phase >= 0.0) & (state.phase < TWO_PI))


# --------------------------------------------------------------------------- validation


def test_rejects_bad_arguments():
    good = prsc.init_state(8)
    s = smf.initial()
    with pytest.raises(TypeError, match="state"):
        tick.run_ticks(tuple(good), s, 1)
    with pytest.raises(TypeError, match=r"state\.phase"):
        tick.run_ticks(good._replace(phase=good.phase.astype(np.float32)), s, 1)
    bad = good.amplitude.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"state\.amplitude"):
        tick.run_ticks(good._replace(amplitude=bad), s, 1)
    with pytest.raises(TypeError, match="s must"):
        tick.run_ticks(good, s.astype(np.float32), 1)
    with pytest.raises(TypeError, match="s must"):
        tick.run_ticks(good, list(s), 1)
    with pytest.raises(ValueError, match="s must"):
        tick.run_ticks(good, np.zeros(15), 1)
    with pytest.raises(ValueError, match="s must"):
        tick.run_ticks(good, np.zeros(32)[::2], 1)
    bad_s = s.copy()
    bad_s[4] = np.inf
    with pytest.raises(ValueError, match="s contains"):
        tick.run_ticks(good, bad_s, 1)
    with pytest.raises(ValueError, match="steps"):
        tick.run_ticks(good, s, -1)
    with pytest.raises(TypeError, match="steps"):
        tick.run_ticks(good, s, True)
    with pytest.raises(ValueError, match="dt"):
        tick.run_ticks(good, s, 1, dt=0.0)
    with pytest.raises(ValueError, match="coupling"):
        tick.run_ticks(good, s, 1, coupling=math.nan)
    with pytest.raises(ValueError, match="damping"):
        tick.run_ticks(good, s, 1, damping=-1.0)
    with pytest.raises(ValueError, match="damping"):
        tick.run_ticks(good, s, 1, damping=100.0, dt=0.1)
    with pytest.raises(ValueError, match="eta"):
        tick.run_ticks(good, s, 1, eta=1.5)
    with pytest.raises(ValueError, match="coherence_out"):
        tick.run_ticks(good, s, 2, coherence_out=np.empty(3))
    with pytest.raises(TypeError, match="entropy_out"):
        tick.run_ticks(good, s, 2, entropy_out=np.empty(2, dtype=np.float32))
    with pytest.raises(ValueError, match="entropy_out"):
        tick.run_ticks(good, s, 2, entropy_out=np.empty((2, 1)))
    frozen = np.empty(2)
    frozen.setflags(write=False)
    with pytest.raises(ValueError, match="coherence_out"):
        tick.run_ticks(good, s, 2, coherence_out=frozen)


def test_rejects_without_touching_state():
    state = prsc.init_state(8)
    before = copy_state(state)
    s = smf.initial()
    with pytest.raises(ValueError):
        tick.run_ticks(state, s, 5, eta=2.0)
    np.testing.assert_array_equal(state.phase, before.phase)
    np.testing.assert_array_equal(s, smf.initial())


def test_warmup_runs():
    tick._warmup()
