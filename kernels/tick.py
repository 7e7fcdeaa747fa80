"""Fused observer tick: PRSC Euler tick + SMF update (+ bookkeeping) per step, one call.

For each of ``steps`` ticks, :func:`run_ticks` does, in place:

1. one PRSC Euler tick of the oscillator bank, with exactly the arithmetic of
   :func:`sentient_kernels.prsc.run` (it calls prsc's own block kernels, so there is one
   source of truth and the oscillator state is bit-identical to
   ``prsc.run(state, 1)`` repeated);
2. the SMF update ``s ← normalize((1 − η) s + η Δ)`` from the *new* amplitudes
   and phases (:func:`sentient_kernels.smf.update` arithmetic, via smf's own kernels);
3. optionally, the coherence ``C = |Σ w e^{iφ}| / Σ w`` (``w = max(0.1, A)``) of
   the new state and the SMF entropy, recorded per step.

Sharing: the tick already evaluates sin φ and cos φ of every new phase (the
next tick's mean field needs them), so Δ's order parameter R and the coherence
reuse those values instead of calling sin/cos again. Those come from prsc's
polynomial (within ~1 ulp of libm) rather than smf's fdlibm kernels, so the
SMF trajectory agrees with the unfused sequence to ~1e-15, not bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from sentient_kernels import prsc, prsc_tick, smf, smf_delta
from sentient_kernels.checks import check_array, check_int, check_scalar
from sentient_kernels.config import jit
from sentient_kernels.prsc import _excite

__all__ = ["excite_and_tick", "run_ticks"]

# Coherence weights are max(COHERENCE_FLOOR, A) (SPEC §1).
_COHERENCE_FLOOR = 0.1


@jit(fastmath=False)
def _coherence_trig(amplitude, sin_phase, cos_phase):
    # C from precomputed sin/cos (same definition as prsc.coherence).
    re = 0.0
    im = 0.0
    total = 0.0
    for i in range(amplitude.shape[0]):
        w = max(_COHERENCE_FLOOR, amplitude[i])
        re += w * cos_phase[i]
        im += w * sin_phase[i]
        total += w
    if total <= 0.0:
        return 0.0
    return math.sqrt(re * re + im * im) / total


@jit(fastmath=False)
def _run_ticks(
    phase,
    amplitude,
    frequency,
    s,
    steps,
    dt,
    coupling,
    decay,
    eta,
    coherence_out,
    entropy_out,
):
    """``steps`` × (PRSC tick, SMF update, records); outputs hold the last values."""
    n = phase.shape[0]
    if steps == 0:
        return
    delta = np.empty(16)
    work = np.empty((3, n))
    int_work = np.empty(n, np.int64)
    # The oscillator ticks are prsc_tick's own serial steps, so the bank
    # advances bit for bit as prsc.run would.
    (sin_phase, cos_phase), parts = prsc_tick._start_serial(phase, amplitude)
    gain = dt * coupling / n if n > 0 else 0.0
    advance = prsc_tick.TWO_PI * dt
    first_coherence = steps - coherence_out.shape[0]
    first_entropy = steps - entropy_out.shape[0]
    for t in range(steps):
        prsc_tick._tick_serial(
            phase, amplitude, frequency, sin_phase, cos_phase, parts, advance, gain, decay
        )
        # sin/cos now hold the new phases: the SMF sees the state after the tick.
        smf_delta._delta_trig(
            amplitude, cos_phase, sin_phase, delta, work, int_work, smf.EPS, smf.ACTIVE_AMPLITUDE
        )
        smf._blend_normalize(s, delta, eta, s, smf.EPS)
        if t >= first_coherence:
            coherence_out[t - first_coherence] = _coherence_trig(amplitude, sin_phase, cos_phase)
        if t >= first_entropy:
            entropy_out[t - first_entropy] = smf._entropy(s, smf.EPS)


@jit(fastmath=False)
def _excite_and_tick(
    phase,
    amplitude,
    frequency,
    s,
    offsets,
    indices,
    amounts,
    targets,
    pull,
    dt,
    coupling,
    decay,
    eta,
    coherence_out,
    entropy_out,
    smf_out,
):
    """Per input ``t``: excite by entries ``offsets[t]:offsets[t + 1]``, then one tick.

    The same kernel calls, in the same order, as the observer queueing one
    input and ticking once, input after input (``prsc._excite`` if the input
    excites anything, then ``_run_ticks`` of one step), so the trajectory is
    the same bit for bit. Records the coherence, entropy and field after each
    input's tick in ``coherence_out[t]``, ``entropy_out[t]``, ``smf_out[t]``.
    """
    for t in range(offsets.size - 1):
        lo, hi = offsets[t], offsets[t + 1]
        if hi > lo:
            _excite(phase, amplitude, indices[lo:hi], amounts[lo:hi], targets[lo:hi], pull, True)
        _run_ticks(
            phase,
            amplitude,
            frequency,
            s,
            1,
            dt,
            coupling,
            decay,
            eta,
            coherence_out[t : t + 1],
            entropy_out[t : t + 1],
        )
        smf_out[t, :] = s


def excite_and_tick(
    state: prsc.PrscState,
    s: np.ndarray,
    offsets: np.ndarray,
    indices: np.ndarray,
    amounts: np.ndarray,
    targets: np.ndarray,
    *,
    pull: float = 0.5,
    dt: float = 1.0 / 60.0,
    coupling: float = 0.3,
    damping: float = 0.02,
    eta: float = smf.DEFAULT_ETA,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Excite and tick once per input, for a batch of inputs, in one kernel call.

    For each input ``t`` in order: :func:`sentient_kernels.prsc.excite` with the
    entries ``offsets[t]:offsets[t + 1]`` (oscillator indices, amounts, target
    phases, ``pull``), skipped when there are none, then one
    :func:`run_ticks` step. Bit-identical to making those calls input by input.

    Parameters
    ----------
    state : PrscState
        Oscillator bank, modified in place.
    s : ndarray of float64, shape (16,)
        SMF field, modified in place.
    offsets : ndarray of int64, shape (n + 1,)
        Non-decreasing, from 0 to ``indices.size``.
    indices : ndarray of int64, shape (E,)
        Oscillator indices in [0, N).
    amounts : ndarray of float64, shape (E,)
        Non-negative, finite amplitude increments.
    targets : ndarray of float64, shape (E,)
        Finite target phases.
    pull : float
        Fraction of the arc toward the target, in [0, 1].
    dt, coupling, damping, eta
        As for :func:`run_ticks`.

    Returns
    -------
    coherence, entropy : ndarray of float64, shape (n,)
        After each input's tick.
    smf : ndarray of float64, shape (n, 16)
        The field after each input's tick.
    """
    prsc.check_state(state)
    s = check_array("s", s, dtype=np.float64, shape=(smf.DIM,))
    offsets = check_array("offsets", offsets, dtype=np.int64, ndim=1, min_rows=1)
    indices = check_array("indices", indices, dtype=np.int64, ndim=1)
    e = indices.shape[0]
    amounts = check_array("amounts", amounts, dtype=np.float64, shape=(e,))
    targets = check_array("targets", targets, dtype=np.float64, shape=(e,))
    if offsets[0] != 0 or offsets[-1] != e or (np.diff(offsets) < 0).any():
        raise ValueError(f"offsets must be non-decreasing from 0 to {e} (the length of indices)")
    n_osc = state.phase.shape[0]
    if e and (indices.min() < 0 or indices.max() >= n_osc):
        raise ValueError(f"indices must lie in [0, {n_osc})")
    if e and amounts.min() < 0.0:
        raise ValueError("amounts must be >= 0")
    pull = check_scalar("pull", pull, lo=0.0, hi=1.0)
    dt = check_scalar("dt", dt, lo=0.0, lo_open=True)
    coupling = check_scalar("coupling", coupling)
    damping = check_scalar("damping", damping, lo=0.0)
    eta = check_scalar("eta", eta, lo=0.0, hi=1.0)
    decay = 1.0 - damping * dt
    if decay < 0.0:
        raise ValueError(f"damping*dt must be <= 1, got {damping * dt}")
    n = offsets.shape[0] - 1
    coherence, entropy, fields = np.empty(n), np.empty(n), np.empty((n, smf.DIM))
    _excite_and_tick(
        state.phase,
        state.amplitude,
        state.frequency,
        s,
        offsets,
        indices,
        amounts,
        targets,
        pull,
        dt,
        coupling,
        decay,
        eta,
        coherence,
        entropy,
        fields,
    )
    return coherence, entropy, fields


# "Record nothing" (writeable so every call has the same Numba signature).
_NO_RECORD = np.empty(0)


def _check_record(name: str, out: object, steps: int) -> np.ndarray:
    if out is None:
        return _NO_RECORD
    out = check_array(name, out, dtype=np.float64, ndim=1, finite=False)
    if out.shape[0] > steps:
        raise ValueError(f"{name} must have at most steps={steps} entries, got {out.shape[0]}")
    if not out.flags.writeable:
        raise ValueError(f"{name} must be writeable")
    return out


def run_ticks(
    state: prsc.PrscState,
    s: np.ndarray,
    steps: int,
    dt: float = 1.0 / 60.0,
    coupling: float = 0.3,
    damping: float = 0.02,
    eta: float = smf.DEFAULT_ETA,
    coherence_out: np.ndarray | None = None,
    entropy_out: np.ndarray | None = None,
) -> np.ndarray:
    """Run ``steps`` observer ticks (PRSC tick, then SMF update) in one kernel call.

    Equivalent to repeating ``prsc.run(state, 1, dt, coupling, damping)`` then
    ``smf.update(s, state.amplitude, state.phase, eta, out=s)`` ``steps`` times:
    the oscillator state bit for bit, the field to ~1e-15.

    Parameters
    ----------
    state : PrscState
        Oscillator bank, modified in place (phase, amplitude).
    s : ndarray of float64, shape (16,)
        SMF field, modified in place.
    steps : int
        Number of ticks (≥ 0; 0 is a no-op).
    dt, coupling, damping : float
        As in :func:`sentient_kernels.prsc.run` (``damping·dt`` must lie in [0, 1]).
    eta : float
        SMF blend rate in [0, 1].
    coherence_out : ndarray of float64, shape (m,), m ≤ steps, optional
        Receives the coherence C of the bank after each of the last ``m`` ticks
        (``m = steps`` records every tick).
    entropy_out : ndarray of float64, shape (m,), m ≤ steps, optional
        Receives the SMF entropy (nats) after each of the last ``m`` ticks.

    Returns
    -------
    ndarray
        ``s`` itself.
    """
    prsc.check_state(state)
    s = check_array("s", s, dtype=np.float64, shape=(smf.DIM,))
    steps = check_int("steps", steps, lo=0)
    dt = check_scalar("dt", dt, lo=0.0, lo_open=True)
    coupling = check_scalar("coupling", coupling)
    damping = check_scalar("damping", damping, lo=0.0)
    eta = check_scalar("eta", eta, lo=0.0, hi=1.0)
    decay = 1.0 - damping * dt
    if decay < 0.0:
        raise ValueError(f"damping*dt must be <= 1, got {damping * dt}")
    coherence_out = _check_record("coherence_out", coherence_out, steps)
    entropy_out = _check_record("entropy_out", entropy_out, steps)
    _run_ticks(
        state.phase,
        state.amplitude,
        state.frequency,
        s,
        steps,
        dt,
        coupling,
        decay,
        eta,
        coherence_out,
        entropy_out,
    )
    return s


def _warmup() -> None:
    state = prsc.init_state(16, seed=0)
    s = smf.initial()
    _run_ticks(
        state.phase,
        state.amplitude,
        state.frequency,
        s,
        2,
        1.0 / 60.0,
        0.3,
        0.99,
        0.1,
        np.empty(2),
        np.empty(1),
    )
    _run_ticks(
        state.phase,
        state.amplitude,
        state.frequency,
        s,
        1,
        1.0 / 60.0,
        0.3,
        0.99,
        0.1,
        _NO_RECORD,
        _NO_RECORD,
    )
    _coherence_trig(state.amplitude, np.sin(state.phase), np.cos(state.phase))
    offsets = np.array([0, 1, 1], dtype=np.int64)
    one = np.array([0.1])
    excite_and_tick(state, s, offsets, np.array([1], dtype=np.int64), one, one.copy())
