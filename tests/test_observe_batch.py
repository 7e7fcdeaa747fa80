"""Observing a batch in one kernel call equals observing it input by input, bit for bit:
sentient_kernels.tick.excite_and_tick and Observer.observe_batch."""

from __future__ import annotations

import numpy as np
import pytest

from sentient_core.encoder import get_encoder
from sentient_core.observer import Observer
from sentient_kernels import prsc, smf, tick, unchecked
from tests.test_text import random_texts

TEXTS = [
    *random_texts(3, 60),
    "",
    "the and of",  # stop words only: no excitation, still a tick
    "Tides follow the moon; the moon pulls the water.",
    *random_texts(4, 700),  # longer than the history ring (600)
]


def per_input(state, s, offsets, idx, amounts, phases, pull, dt, coupling, damping, eta):
    """The reference: excite (if anything), then one tick, input after input."""
    decay = 1.0 - damping * dt
    coh, ent, fields = [], [], []
    for t in range(offsets.size - 1):
        lo, hi = offsets[t], offsets[t + 1]
        if hi > lo:
            unchecked.prsc_excite(
                state.phase, state.amplitude, idx[lo:hi], amounts[lo:hi].copy(),
                phases[lo:hi].copy(), pull, True,
            )  # fmt: skip
        c, e = np.empty(1), np.empty(1)
        unchecked.run_ticks(
            state.phase, state.amplitude, state.frequency, s, 1, dt, coupling, decay, eta, c, e
        )
        coh.append(c[0])
        ent.append(e[0])
        fields.append(s.copy())
    return np.array(coh), np.array(ent), np.array(fields)


@pytest.mark.parametrize("seed", [0, 1])
def test_kernel_equals_input_by_input(seed):
    batch = get_encoder("token").encode_many(TEXTS)
    kw = dict(pull=0.5, dt=1 / 60, coupling=0.3 + 0.1 * seed, damping=0.02, eta=smf.DEFAULT_ETA)
    ref_state, ref_s = prsc.init_state(64, seed), smf.initial()
    state, s = prsc.init_state(64, seed), smf.initial()
    want = per_input(
        ref_state, ref_s, batch.offsets, batch.indices, batch.amounts, batch.phases, **kw
    )
    got = tick.excite_and_tick(
        state, s, batch.offsets, batch.indices, batch.amounts, batch.phases, **kw
    )
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    for a, b in zip(state, ref_state, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(s, ref_s)
    assert not np.array_equal(got[2][0], got[2][-1])  # the field moved


def test_kernel_matches_the_pure_python_reference():
    """Against tests/naive_prsc.excite + tests/naive_tick (pure Python): ~1e-12."""
    from tests.naive import prsc as naive_prsc
    from tests.naive import tick as naive_tick

    batch = get_encoder("token").encode_many(TEXTS[:40])
    state, s = prsc.init_state(64, 5), smf.initial()
    phase, amp, ref_s = state.phase.copy(), state.amplitude.copy(), s.copy()
    coh, ent, fields = tick.excite_and_tick(
        state, s, batch.offsets, batch.indices, batch.amounts, batch.phases, eta=0.1
    )
    for t in range(len(batch)):
        lo, hi = batch.offsets[t], batch.offsets[t + 1]
        if hi > lo:
            phase, amp = naive_prsc.excite(
                phase, amp, batch.indices[lo:hi], batch.amounts[lo:hi], batch.phases[lo:hi], 0.5
            )
        phase, amp, ref_s, c, e = naive_tick.run_ticks_naive(
            phase, amp, state.frequency, ref_s, 1, eta=0.1
        )
        np.testing.assert_allclose(fields[t], ref_s, rtol=0, atol=1e-12)
        assert abs(coh[t] - c[0]) < 1e-12 and abs(ent[t] - e[0]) < 1e-12
    np.testing.assert_allclose(state.amplitude, amp, rtol=0, atol=1e-12)


def observed_one_by_one(obs: Observer, batch) -> np.ndarray:
    fields = []
    for i in range(len(batch)):
        obs.process_encoded(batch.item(i))
        obs.tick(1)
        fields.append(obs.smf)
    return np.array(fields)


@pytest.mark.parametrize("encoder", ["token", "token-wide", "char-compat"])
def test_observer_batch_equals_process_encoded_and_tick(encoder):
    if encoder == "token-wide":  # a bank wider than the oscillators: mapped by prime
        make = lambda: Observer(n_oscillators=16, seed=2, encoder=get_encoder("token"))  # noqa: E731
    else:
        make = lambda: Observer(seed=2, encoder=get_encoder(encoder))  # noqa: E731
    ref, obs = make(), make()
    for o in (ref, obs):
        o.process_text("queued before the batch")  # applied with the first input
        o.tick(3)
        o.process_text("and one more queued")
    batch = ref.encoder.encode_many(TEXTS)
    want = observed_one_by_one(ref, batch)
    got = obs.observe_batch(batch.offsets, batch.indices, batch.amounts, batch.phases)
    np.testing.assert_array_equal(got, want)
    assert obs.to_record() == ref.to_record()  # state, histories, tick count, queue
    assert obs.coherence == ref.coherence and obs.entropy == ref.entropy


def test_observer_batch_of_nothing_changes_nothing():
    obs = Observer(seed=1)
    obs.process_text("moon tides")
    before = obs.to_record()
    empty = np.zeros(1, np.int64)
    fields = obs.observe_batch(empty, np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    assert fields.shape == (0, 16) and obs.to_record() == before and obs.pending == 1


def test_rejects_bad_arguments_without_touching_state():
    obs = Observer(seed=1)
    before = obs.to_record()
    one = np.array([0.1])
    with pytest.raises(ValueError, match="offsets"):
        obs.observe_batch(np.array([0, 2], np.int64), np.array([1], np.int64), one, one)
    with pytest.raises(ValueError, match="indices"):
        obs.observe_batch(np.array([0, 1], np.int64), np.array([64], np.int64), one, one)
    with pytest.raises(ValueError, match="amounts"):
        obs.observe_batch(np.array([0, 1], np.int64), np.array([1], np.int64), -one, one)
    with pytest.raises(ValueError, match=r"finite|NaN"):
        obs.observe_batch(np.array([0, 1], np.int64), np.array([1], np.int64), one, one * np.nan)
    assert obs.to_record() == before
    state, s = prsc.init_state(8, 0), smf.initial()
    with pytest.raises(ValueError, match="indices"):
        tick.excite_and_tick(state, s, np.array([0, 1]), np.array([8]), one, one)
    with pytest.raises(ValueError, match="pull"):
        tick.excite_and_tick(state, s, np.array([0, 1]), np.array([1]), one, one, pull=2.0)
