"""sentient_kernels.credit against the plain-Python reference and the facts stated in SPEC §5."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_kernels import credit
from sentient_kernels.credit import CreditState
from tests.naive import credit as naive


def events(mem, dirs, surprise):
    return (
        np.asarray(mem, dtype=np.int64),
        np.asarray(dirs, dtype=np.int8),
        np.asarray(surprise, dtype=np.float64),
    )


def repeated(n, direction, s, memory=0):
    return events([memory] * n, [direction] * n, [s] * n)


def assert_matches_reference(state: CreditState, mem, dirs, surprise):
    ref = naive.apply_events(*state, mem, dirs, surprise)
    delta = credit.apply_events(state, mem, dirs, surprise)
    assert state.credit.tolist() == ref[0]
    assert state.streak.tolist() == ref[1]
    assert state.last_dir.tolist() == ref[2]
    assert state.strength.tolist() == ref[3]
    assert delta.tolist() == ref[4]
    return delta


# --------------------------------------------------------------------------- evidence


def test_evidence_formula():
    assert credit.evidence(0.0) == 0.0
    assert credit.evidence(0.19999) == 0.0
    assert credit.evidence(0.2) == 0.0
    assert credit.evidence(1.0) == 1.0
    assert credit.evidence(0.6) == pytest.approx(0.25, rel=1e-15)
    assert credit.evidence(0.5) == pytest.approx((0.3 / 0.8) ** 2, rel=1e-15)
    s = np.linspace(0.0, 1.0, 101)
    assert credit.evidence(s).tolist() == [naive.evidence(x) for x in s.tolist()]


def test_evidence_rejects_out_of_range():
    for bad in (-0.1, 1.1, math.nan, math.inf):
        with pytest.raises(ValueError, match="s"):
            credit.evidence(bad)
    with pytest.raises(ValueError, match="s"):
        credit.evidence(np.array([0.5, 1.5]))
    with pytest.raises(ValueError, match="s"):
        credit.evidence(np.array([np.nan]))
    with pytest.raises(TypeError, match="s"):
        credit.evidence(np.array([1], dtype=np.int64))
    with pytest.raises(TypeError, match="s"):
        credit.evidence("0.5")


# --------------------------------------------------------------------------- spec facts


@pytest.mark.parametrize("direction", [1, -1])
@pytest.mark.parametrize(("s", "first_change"), [(1.0, 2), (0.6, 4)])
def test_first_strength_change_event(direction, s, first_change):
    state = credit.new_state(3)
    delta = credit.apply_events(state, *repeated(first_change + 2, direction, s, memory=1))
    changed = np.flatnonzero(delta)
    assert changed[0] + 1 == first_change
    assert np.sign(delta[changed[0]]) == direction
    assert state.strength[1] == pytest.approx(1.0 + delta.sum())
    # Other memories untouched.
    assert state.strength[0] == 1.0
    assert state.strength[2] == 1.0


def test_first_step_size_follows_formula():
    state = credit.new_state(1)
    delta = credit.apply_events(state, *repeated(2, 1, 1.0))
    c = 0.85 * 1.0 + 1.0  # credit at the 2nd event
    assert delta[1] == pytest.approx(min(0.08, 0.02 + 0.06 * min(c - 0.75, 1.0)), abs=1e-15)
    assert state.credit[0] == pytest.approx(0.35 * c, abs=1e-15)


def test_gate_needs_a_streak_of_two_even_with_large_credit():
    state = credit.new_state(1)
    state.credit[0] = 5.0  # large credit carried over, but no streak yet
    delta = credit.apply_events(state, *repeated(1, 1, 1.0))
    assert delta[0] == 0.0
    assert state.streak[0] == 1


def test_streak_not_reset_by_gate():
    # s = 1.0 keeps firing on every event after the first: credit 0.35·c + 1 stays ≥ 0.75.
    state = credit.new_state(1)
    delta = credit.apply_events(state, *repeated(6, 1, 1.0))
    assert (delta[1:] > 0).all()
    assert state.streak[0] == 6
    # s = 0.6 fires on events 4, 7, 10.
    state = credit.new_state(1)
    delta = credit.apply_events(state, *repeated(10, -1, 0.6))
    assert (np.flatnonzero(delta) + 1).tolist() == [4, 7, 10]


def test_sub_threshold_events_decay_credit_but_keep_streak():
    state = credit.new_state(1)
    credit.apply_events(state, *repeated(1, 1, 1.0))
    assert state.credit[0] == 1.0 and state.streak[0] == 1
    # Opposite-direction noise: credit decays, streak and direction stay.
    delta = credit.apply_events(state, *events([0, 0], [-1, -1], [0.1, 0.2]))
    assert (delta == 0).all()
    assert state.credit[0] == 0.85 * 0.85
    assert state.streak[0] == 1 and state.last_dir[0] == 1
    # The next strong signal in the old direction continues the run (streak 2) and fires.
    delta = credit.apply_events(state, *repeated(1, 1, 1.0))
    assert state.streak[0] == 2
    assert delta[0] > 0


def test_noise_alone_never_changes_strength():
    state = credit.new_state(4)
    state.credit[:] = [0.9, -0.9, 3.0, -3.0]
    state.streak[:] = 5
    state.last_dir[:] = [1, -1, 1, -1]
    rng = np.random.default_rng(1)
    n = 200
    delta = credit.apply_events(
        state,
        *events(rng.integers(0, 4, n), rng.choice([-1, 1], n), rng.uniform(0.0, 0.2, n)),
    )
    assert (delta == 0).all()
    assert (state.strength == 1.0).all()
    assert (state.streak == 5).all()


def test_interleaved_directions_reset_the_streak():
    state = credit.new_state(1)
    delta = credit.apply_events(state, *events([0] * 8, [1, -1] * 4, [1.0] * 8))
    assert (delta == 0).all()
    assert state.streak[0] == 1
    assert state.last_dir[0] == -1
    # Two in a row after the flip-flopping: credit 0.85·c − 1 then again − 1 → gate opens.
    delta = credit.apply_events(state, *repeated(2, -1, 1.0))
    assert state.streak[0] == 3
    assert delta[0] < 0


def test_direction_change_resets_streak_to_one():
    state = credit.new_state(1)
    credit.apply_events(state, *repeated(3, 1, 0.5))
    assert state.streak[0] == 3
    credit.apply_events(state, *repeated(1, -1, 0.5))
    assert state.streak[0] == 1
    assert state.last_dir[0] == -1


@pytest.mark.parametrize(("direction", "bound"), [(1, 1.5), (-1, 0.05)])
def test_strength_clamped_at_bounds(direction, bound):
    state = credit.new_state(2, strength=bound - direction * 0.01)
    delta = credit.apply_events(state, *repeated(50, direction, 1.0))
    assert state.strength[0] == bound
    assert state.strength[1] == bound - direction * 0.01
    assert delta.sum() == pytest.approx(direction * 0.01, abs=1e-15)
    # At the bound the gate still fires (credit shrinks) but the change is 0.
    before = state.credit[0]
    delta = credit.apply_events(state, *repeated(1, direction, 1.0))
    assert delta[0] == 0.0
    assert state.credit[0] == 0.35 * (0.85 * before + direction)


def test_same_memory_events_are_sequential_within_one_call():
    one = credit.new_state(2)
    split = credit.new_state(2)
    rng = np.random.default_rng(5)
    n = 300
    ev = events(rng.integers(0, 2, n), rng.choice([-1, 1], n), rng.uniform(0.0, 1.0, n))
    d_one = credit.apply_events(one, *ev)
    d_split = np.concatenate(
        [credit.apply_events(split, *(x[i : i + 7].copy() for x in ev)) for i in range(0, n, 7)]
    )
    assert d_one.tolist() == d_split.tolist()
    for a, b in zip(one, split, strict=True):
        assert a.tolist() == b.tolist()


# --------------------------------------------------------------------------- reference


@pytest.mark.parametrize("seed", range(6))
def test_matches_reference_on_random_streams(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 6))
    n = 3000
    state = credit.new_state(m, strength=float(rng.uniform(0.05, 1.5)))
    # Runs of the same direction (so gates open) mixed with flips and noise.
    dirs = np.repeat(rng.choice([-1, 1], n // 5), 5)[:n]
    dirs[rng.random(n) < 0.15] *= -1
    surprise = rng.choice([0.0, 0.1, 0.2, 0.35, 0.6, 0.8, 1.0], n)
    surprise = np.where(rng.random(n) < 0.5, rng.random(n), surprise)
    mem = rng.integers(0, m, n)
    delta = assert_matches_reference(state, *events(mem, dirs, surprise))
    assert (delta != 0).sum() > 10  # the stream really exercised the gate


@settings(deadline=None, max_examples=200)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2),
            st.sampled_from([-1, 1]),
            st.floats(0.0, 1.0),
        ),
        max_size=60,
    ),
    st.floats(0.05, 1.5),
)
def test_matches_reference_hypothesis(stream, strength):
    state = credit.new_state(3, strength=strength)
    mem, dirs, surprise = zip(*stream, strict=True) if stream else ([], [], [])
    delta = assert_matches_reference(state, *events(mem, dirs, surprise))
    assert ((state.strength >= 0.05) & (state.strength <= 1.5)).all()
    assert (np.abs(delta) <= 0.08 + 1e-15).all()


def test_empty_event_batch():
    state = credit.new_state(3)
    delta = credit.apply_events(state, *events([], [], []))
    assert delta.shape == (0,)
    assert (state.credit == 0).all()


# --------------------------------------------------------------------------- validation


def test_new_state_layout_and_validation():
    state = credit.new_state(4, strength=0.5)
    assert [a.dtype for a in state] == [np.float64, np.int64, np.int8, np.float64]
    assert all(a.shape == (4,) and a.flags.c_contiguous for a in state)
    assert (state.strength == 0.5).all()
    with pytest.raises(ValueError, match="strength"):
        credit.new_state(4, strength=2.0)
    with pytest.raises(ValueError, match="m"):
        credit.new_state(-1)


def test_apply_events_rejects_bad_events():
    state = credit.new_state(4)
    mem, dirs, surprise = events([0, 3], [1, -1], [0.5, 0.5])
    with pytest.raises(ValueError, match="memory_index"):
        credit.apply_events(state, np.array([0, 4], dtype=np.int64), dirs, surprise)
    with pytest.raises(ValueError, match="memory_index"):
        credit.apply_events(state, np.array([-1, 0], dtype=np.int64), dirs, surprise)
    with pytest.raises(TypeError, match="memory_index"):
        credit.apply_events(state, mem.astype(np.int32), dirs, surprise)
    with pytest.raises(ValueError, match="direction"):
        credit.apply_events(state, mem, np.array([1, 0], dtype=np.int8), surprise)
    with pytest.raises(ValueError, match="direction"):
        credit.apply_events(state, mem, np.array([2, -1], dtype=np.int8), surprise)
    with pytest.raises(TypeError, match="direction"):
        credit.apply_events(state, mem, dirs.astype(np.int64), surprise)
    with pytest.raises(ValueError, match="direction"):
        credit.apply_events(state, mem, dirs[:1].copy(), surprise)
    with pytest.raises(ValueError, match="surprise"):
        credit.apply_events(state, mem, dirs, np.array([0.5, 1.01]))
    with pytest.raises(ValueError, match="surprise"):
        credit.apply_events(state, mem, dirs, np.array([-0.01, 0.5]))
    with pytest.raises(ValueError, match="surprise"):
        credit.apply_events(state, mem, dirs, np.array([np.nan, 0.5]))
    with pytest.raises(ValueError, match="surprise"):
        credit.apply_events(state, mem, dirs, np.array([0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match="surprise"):
        credit.apply_events(state, mem, dirs, np.array([0.5, 0.0, 0.5, 0.0])[::2])
    # Nothing was applied by the rejected calls.
    assert (state.credit == 0).all() and (state.streak == 0).all()


def test_apply_events_rejects_bad_state():
    mem, dirs, surprise = events([0], [1], [0.5])
    good = credit.new_state(2)
    with pytest.raises(TypeError, match="state"):
        credit.apply_events(tuple(good), mem, dirs, surprise)
    with pytest.raises(TypeError, match=r"state\.last_dir"):
        credit.apply_events(good._replace(last_dir=np.zeros(2, np.int64)), mem, dirs, surprise)
    with pytest.raises(ValueError, match=r"state\.streak"):
        credit.apply_events(good._replace(streak=np.zeros(3, np.int64)), mem, dirs, surprise)
    with pytest.raises(ValueError, match=r"state\.credit"):
        credit.apply_events(good._replace(credit=np.array([0.0, np.nan])), mem, dirs, surprise)
    with pytest.raises(ValueError, match=r"state\.strength"):
        credit.apply_events(good._replace(strength=np.array([1.0, 1.6])), mem, dirs, surprise)
    with pytest.raises(ValueError, match=r"state\.last_dir"):
        credit.apply_events(good._replace(last_dir=np.array([0, 3], np.int8)), mem, dirs, surprise)
    with pytest.raises(ValueError, match=r"state\.streak"):
        credit.apply_events(good._replace(streak=np.array([0, -1])), mem, dirs, surprise)


def test_warmup_runs():
    credit._warmup()
