"""prsc.run_with_work / unchecked.prsc_run_work: step-by-step runs on caller-owned work arrays
are bit-identical to prsc.run (issue 25 item 6)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from sentient_kernels import prsc, unchecked
from sentient_kernels.prsc import PrscState

DECAY = 1.0 - prsc.DEFAULT_DAMPING * prsc.DEFAULT_DT


def copy_state(state: PrscState) -> PrscState:
    return PrscState(*(x.copy() for x in state))


def assert_same(a: PrscState, b: PrscState) -> None:
    np.testing.assert_array_equal(a.phase, b.phase)
    np.testing.assert_array_equal(a.amplitude, b.amplitude)


@pytest.mark.parametrize("n", [1, 64, 1024, 1500, 3000])
def test_ticks_split_into_calls_on_one_work_equal_one_run(n):
    one = prsc.init_state(n, seed=n)
    one.amplitude[:] = np.random.default_rng(n).uniform(0.0, 1.0, n)  # strong coupling
    kept = copy_state(one)
    prsc.run(one, 40)
    work = prsc.new_work(n)
    for steps in (1, 1, 3, 0, 7, 1, 12, 15):  # 40 ticks in uneven calls
        prsc.run_with_work(kept, steps, work)
    assert_same(one, kept)


def test_a_bank_changed_between_calls_is_restarted_not_stepped_from_stale_trig():
    ref = prsc.init_state(64, seed=1)
    kept = copy_state(ref)
    work = prsc.new_work(64)
    idx = np.array([3, 40], dtype=np.int64)
    for k in range(6):
        prsc.run(ref, 2)
        prsc.run_with_work(kept, 2, work)
        # Between calls: an excitation (phases and amplitudes), or an amplitude edit only.
        if k % 2 == 0:
            for bank in (ref, kept):
                prsc.excite(bank, idx, np.full(2, 0.3), target_phase=np.array([1.0, 4.0]))
        else:
            ref.amplitude[5] = kept.amplitude[5] = 0.9
    prsc.run(ref, 5)
    prsc.run_with_work(kept, 5, work)
    assert_same(ref, kept)


def test_skipping_the_start_is_what_would_go_wrong_without_the_change_check():
    # The work must be tied to the bank it last stepped: a second bank of the
    # same size stepped on it still matches prsc.run (its phases differ, so the
    # start pass runs), while stale trig used as-is would not.
    a, b = prsc.init_state(64, seed=1), prsc.init_state(64, seed=2)
    ref_b = copy_state(b)
    work = prsc.new_work(64)
    prsc.run_with_work(a, 3, work)
    prsc.run_with_work(b, 3, work)
    prsc.run(ref_b, 3)
    assert_same(ref_b, b)
    # Stale: b's phases written over the record of a's, so the kernel trusts a's sin/cos.
    c = prsc.init_state(64, seed=3)
    ref_c = copy_state(c)
    prsc.run_with_work(a, 1, work)
    work.trig[2] = c.phase
    work.trig[3] = c.amplitude
    prsc.run_with_work(c, 3, work)
    prsc.run(ref_c, 3)
    assert not np.array_equal(ref_c.phase, c.phase)


@numba.njit
def _steps_with_work(phase, amplitude, frequency, steps, dt, coupling, decay):
    trig, parts = unchecked.prsc_new_work(phase.shape[0])
    for _ in range(steps):
        unchecked.prsc_run_work(phase, amplitude, frequency, 1, dt, coupling, decay, trig, parts)


@numba.njit
def _steps_plain(phase, amplitude, frequency, steps, dt, coupling, decay):
    for _ in range(steps):
        unchecked.prsc_run(phase, amplitude, frequency, 1, dt, coupling, decay)


@numba.njit(fastmath=True)
def _steps_with_work_fastmath(phase, amplitude, frequency, steps, dt, coupling, decay):
    trig, parts = unchecked.prsc_new_work(phase.shape[0])
    for _ in range(steps):
        unchecked.prsc_run_work(phase, amplitude, frequency, 1, dt, coupling, decay, trig, parts)


def test_step_by_step_from_njit_is_bit_identical_to_one_run_and_to_plain_steps():
    one = prsc.init_state(200, seed=5)
    kept, plain, fast = copy_state(one), copy_state(one), copy_state(one)
    prsc.run(one, 100)
    args = (prsc.DEFAULT_DT, prsc.DEFAULT_COUPLING, DECAY)
    _steps_with_work(kept.phase, kept.amplitude, kept.frequency, 100, *args)
    _steps_plain(plain.phase, plain.amplitude, plain.frequency, 100, *args)
    # A fast-math caller must not change the kernel's arithmetic (no inlining).
    _steps_with_work_fastmath(fast.phase, fast.amplitude, fast.frequency, 100, *args)
    assert_same(one, kept)
    assert_same(one, plain)
    assert_same(one, fast)


def test_unchecked_names_are_the_kernels():
    assert unchecked.prsc_run_work is prsc._tick_loop_kept
    assert unchecked.prsc_new_work is prsc._new_work


def test_new_work_shapes_and_a_fresh_work_matches_nothing():
    work = prsc.new_work(3000)
    assert work.trig.shape == (4, 3000) and work.parts.shape == (2, 3)
    assert np.isnan(work.trig[2:]).all()
    assert prsc.new_work(0).parts.shape == (2, 0)


def test_run_with_work_rejects_bad_arguments_without_touching_the_bank():
    state = prsc.init_state(64, seed=0)
    before = copy_state(state)
    good = prsc.new_work(64)
    with pytest.raises(TypeError, match="work must be a PrscWork"):
        prsc.run_with_work(state, 1, (good.trig, good.parts))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"work\.trig"):
        prsc.run_with_work(state, 1, prsc.new_work(63))
    with pytest.raises(ValueError, match=r"work\.parts"):
        prsc.run_with_work(state, 1, prsc.PrscWork(good.trig, np.zeros((2, 2))))
    frozen = prsc.new_work(64)
    frozen.trig.flags.writeable = False
    with pytest.raises(ValueError, match=r"work\.trig"):
        prsc.run_with_work(state, 1, frozen)
    with pytest.raises(ValueError, match="steps"):
        prsc.run_with_work(state, -1, good)
    with pytest.raises(ValueError, match="damping"):
        prsc.run_with_work(state, 1, good, damping=1e9)
    with pytest.raises(ValueError, match=r"\bn\b"):
        prsc.new_work(-1)
    assert_same(before, state)
