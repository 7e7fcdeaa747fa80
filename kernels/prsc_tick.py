"""The oscillator bank's tick loop (SPEC §2): O(N) mean-field steps in fixed-order chunks.

Kernels only (njit-callable, no checks): :func:`sentient_kernels.prsc.run` wraps them,
:mod:`sentient_kernels.tick` reuses the chunk steps inside the fused observer tick, and
:mod:`sentient_kernels.unchecked` exposes the serial loop. Serial and parallel loops sum
the mean field chunk by chunk in the same order, so they agree bit for bit.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from numba import prange

from sentient_kernels.config import jit

__all__: list[str] = []

TWO_PI = 2.0 * math.pi
# Amplitudes below this are snapped to exactly zero after each tick.
_AMPLITUDE_FLOOR = 1e-10

# Largest finite float64 (abs(x) <= it is False exactly for NaN and ±inf).
_MAX_FINITE = sys.float_info.max
# Oscillators per block: the unit of parallel work and of the fixed
# summation order of the mean field (so serial and parallel runs agree bit
# for bit). 1024 oscillators' (φ, A, f, sin, cos) fit in L1.
_CHUNK = 1024

# Argument reduction by π/2 in two parts (fdlibm's pio2_1, pio2_1t) and the
# Cephes minimax coefficients of sin and cos on [−π/4, π/4].
_TWO_OVER_PI = 0.636619772367581343076
_PIO2_HI = 1.57079632673412561417e00
_PIO2_LO = 6.07710050650619224932e-11
_S1 = -1.66666666666666307295e-1
_S2 = 8.33333333332211858878e-3
_S3 = -1.98412698295895385996e-4
_S4 = 2.75573136213857245213e-6
_S5 = -2.50507477628578072866e-8
_S6 = 1.58962301576546568060e-10
_C1 = 4.16666666666665929218e-2
_C2 = -1.38888888888730564116e-3
_C3 = 2.48015872888517045348e-5
_C4 = -2.75573141792967388112e-7
_C5 = 2.08757008419747316778e-9
_C6 = -1.13585365213876817300e-11


@jit(fastmath=False)
def _wrap_phase(p: float) -> float:
    # Increments per tick are small, so the floor() path is rare. The second
    # test catches p = -tiny, for which p + 2π rounds to exactly 2π.
    if p >= TWO_PI or p < 0.0:
        p -= TWO_PI * math.floor(p / TWO_PI)
        if p >= TWO_PI or p < 0.0:
            p = 0.0
    return p


@jit(fastmath=False)
def _sincos(x: float) -> tuple[float, float]:
    # (sin x, cos x) for x in [0, 2π], within ~1 ulp of libm. Branch-free so
    # the tick loop vectorises (a libm sincos call is
    # scalar and measured ~15× slower per evaluation here).
    # x = j·π/2 + y with |y| ≤ π/4; j·_PIO2_HI is exact for small j, so y
    # carries no cancellation error. Minimax polynomials from Cephes sin.c.
    j = math.floor(x * _TWO_OVER_PI + 0.5)
    y = (x - j * _PIO2_HI) - j * _PIO2_LO
    z = y * y
    s = y + y * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
    c = 1.0 - 0.5 * z + z * z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
    q = int(j)
    odd = (q & 1) == 1
    s_out = c if odd else s
    c_out = s if odd else c
    if q & 2:
        s_out = -s_out
    if (q + 1) & 2:
        c_out = -c_out
    return s_out, c_out


@jit(fastmath=False)
def _chunk_mean_field(amplitude, sin_phase, cos_phase):
    # Σ w sin φ and Σ w cos φ over one chunk in four fixed lanes: a fixed
    # order (so results do not depend on threads) that still pipelines.
    n = amplitude.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    c0 = c1 = c2 = c3 = 0.0
    for i in range(0, n - 3, 4):
        w0 = min(1.0, amplitude[i] + 0.1)
        w1 = min(1.0, amplitude[i + 1] + 0.1)
        w2 = min(1.0, amplitude[i + 2] + 0.1)
        w3 = min(1.0, amplitude[i + 3] + 0.1)
        s0 += w0 * sin_phase[i]
        s1 += w1 * sin_phase[i + 1]
        s2 += w2 * sin_phase[i + 2]
        s3 += w3 * sin_phase[i + 3]
        c0 += w0 * cos_phase[i]
        c1 += w1 * cos_phase[i + 1]
        c2 += w2 * cos_phase[i + 2]
        c3 += w3 * cos_phase[i + 3]
    for i in range(n - n % 4, n):
        w = min(1.0, amplitude[i] + 0.1)
        s0 += w * sin_phase[i]
        c0 += w * cos_phase[i]
    return (s0 + s1) + (s2 + s3), (c0 + c1) + (c2 + c3)


@jit(fastmath=False)
def _chunk_start(phase, amplitude, sin_phase, cos_phase):
    # Initial (sin, cos); incoming phases may be unwrapped, so wrap the
    # argument first (the state itself is wrapped by the first tick).
    for i in range(phase.shape[0]):
        s, c = _sincos(_wrap_phase(phase[i]))
        sin_phase[i] = s
        cos_phase[i] = c
    return _chunk_mean_field(amplitude, sin_phase, cos_phase)


@jit(fastmath=False, inline=True)
def _chunk_tick(
    phase, amplitude, frequency, sin_phase, cos_phase, advance, gain, w_sin, w_cos, decay
):
    # One tick for one chunk (views starting at 0, so indexing is affine and
    # the loop vectorises) from the old mean field (w_sin, w_cos); returns the
    # chunk's share of the next tick's mean field.
    for i in range(phase.shape[0]):
        p = phase[i] + advance * frequency[i]
        p += gain * (cos_phase[i] * w_sin - sin_phase[i] * w_cos)
        p = _wrap_phase(p)
        phase[i] = p
        a = amplitude[i] * decay
        if a < _AMPLITUDE_FLOOR:
            a = 0.0
        amplitude[i] = a
        s, c = _sincos(p)
        sin_phase[i] = s
        cos_phase[i] = c
    return _chunk_mean_field(amplitude, sin_phase, cos_phase)


# Below, ``parts`` is a (2, n_chunks) array: each chunk's share (Σ w sin φ,
# Σ w cos φ) of the mean field, summed in chunk order by _mean_field.


@jit(fastmath=False)
def _start_chunk(phase, amplitude, sin_phase, cos_phase, parts, k):
    # Chunk k's start (see _chunk_start) and its share of the mean field.
    lo = k * _CHUNK
    hi = min(phase.shape[0], lo + _CHUNK)
    parts[0, k], parts[1, k] = _chunk_start(
        phase[lo:hi], amplitude[lo:hi], sin_phase[lo:hi], cos_phase[lo:hi]
    )


@jit(fastmath=False)
def _tick_chunk(phase, amplitude, frequency, trig, parts, k, advance, gain, w_sin, w_cos, decay):
    # One tick of chunk k (see _chunk_tick) into parts[:, k]; trig is
    # (sin_phase, cos_phase), a tuple so that the prange body stays one call.
    sin_phase, cos_phase = trig
    lo = k * _CHUNK
    hi = min(phase.shape[0], lo + _CHUNK)
    parts[0, k], parts[1, k] = _chunk_tick(
        phase[lo:hi],
        amplitude[lo:hi],
        frequency[lo:hi],
        sin_phase[lo:hi],
        cos_phase[lo:hi],
        advance,
        gain,
        w_sin,
        w_cos,
        decay,
    )


@jit(fastmath=False)
def _mean_field(parts):
    # The chunks' shares in chunk order: the one summation order of every loop.
    w_sin = 0.0
    w_cos = 0.0
    for k in range(parts.shape[1]):
        w_sin += parts[0, k]
        w_cos += parts[1, k]
    return w_sin, w_cos


@jit(fastmath=False, inline=True)
def _tick_serial(phase, amplitude, frequency, sin_phase, cos_phase, parts, advance, gain, decay):
    """One tick of the whole bank, chunk after chunk, from and into ``parts``.

    Shared by :func:`_tick_loop_serial` and the fused observer tick
    (:mod:`sentient_kernels.tick`), so both advance the bank bit for bit alike. Inlined
    (as is :func:`_chunk_tick`) and given plain arrays, not tuples: a call per
    tick, or arrays unpacked from a tuple per tick, cost their reference
    counting, measured at +10-25% on a 64-oscillator bank.
    """
    n_chunks = parts.shape[1]
    if n_chunks == 1:
        # Small bank: skip the per-tick slicing (reference counting) overhead.
        parts[0, 0], parts[1, 0] = _chunk_tick(
            phase,
            amplitude,
            frequency,
            sin_phase,
            cos_phase,
            advance,
            gain,
            parts[0, 0],
            parts[1, 0],
            decay,
        )
        return
    w_sin, w_cos = _mean_field(parts)
    trig = (sin_phase, cos_phase)
    for k in range(n_chunks):
        _tick_chunk(phase, amplitude, frequency, trig, parts, k, advance, gain, w_sin, w_cos, decay)


@jit(fastmath=False)
def _work(n):
    # Scratch of a tick loop over n oscillators: (sin, cos) per oscillator and parts.
    return (np.empty(n), np.empty(n)), np.empty((2, (n + _CHUNK - 1) // _CHUNK))


@jit(fastmath=False)
def _start_serial(phase, amplitude):
    """``(sin, cos)`` of the wrapped phases, and ``parts`` of the bank as it is."""
    trig, parts = _work(phase.shape[0])
    for k in range(parts.shape[1]):
        _start_chunk(phase, amplitude, trig[0], trig[1], parts, k)
    return trig, parts


@jit(fastmath=False)
def _tick_loop_serial(phase, amplitude, frequency, steps, dt, coupling, decay):
    n = phase.shape[0]
    if n == 0 or steps == 0:
        return
    (sin_phase, cos_phase), parts = _start_serial(phase, amplitude)
    gain = dt * coupling / n
    advance = TWO_PI * dt
    for _ in range(steps):
        _tick_serial(phase, amplitude, frequency, sin_phase, cos_phase, parts, advance, gain, decay)


@jit(parallel=True, fastmath=False)
def _tick_loop_parallel(phase, amplitude, frequency, steps, dt, coupling, decay):
    # Same chunks and summation order as _tick_loop_serial (bit-identical
    # results); chunks of one tick run in parallel, ticks in sequence.
    n = phase.shape[0]
    if n == 0 or steps == 0:
        return
    trig, parts = _work(n)
    sin_phase, cos_phase = trig
    for k in prange(parts.shape[1]):
        _start_chunk(phase, amplitude, sin_phase, cos_phase, parts, k)
    gain = dt * coupling / n
    advance = TWO_PI * dt
    for _ in range(steps):
        w_sin, w_cos = _mean_field(parts)
        for k in prange(parts.shape[1]):
            _tick_chunk(
                phase, amplitude, frequency, trig, parts, k, advance, gain, w_sin, w_cos, decay
            )


@jit(fastmath=False)
def _run_serial_checked(phase, amplitude, frequency, n_primes, steps, dt, coupling, decay):
    """:func:`_tick_loop_serial` after checking the bank; returns 0 when done.

    Returns 1 if ``amplitude``, ``frequency`` or the primes (``n_primes``) do
    not match ``phase`` in length, 2 if a phase, amplitude or frequency is NaN
    or ±inf or an amplitude is negative; the bank is then untouched.
    """
    n = phase.shape[0]
    if amplitude.shape[0] != n or frequency.shape[0] != n or n_primes != n:
        return 1
    # One branch-free pass (it vectorises): NaN fails every comparison.
    n_ok = 0
    for i in range(n):
        n_ok += (
            (abs(phase[i]) <= _MAX_FINITE)
            & (amplitude[i] >= 0.0)
            & (amplitude[i] <= _MAX_FINITE)
            & (abs(frequency[i]) <= _MAX_FINITE)
        )
    if n_ok != n:
        return 2
    _tick_loop_serial(phase, amplitude, frequency, steps, dt, coupling, decay)
    return 0


# Caller-owned work for step-by-step runs: a call of _tick_loop_serial allocates
# its scratch and recomputes every sin/cos before its first tick, which for a
# 64-oscillator bank doubled the cost of a one-tick call from @njit code
# (1.80 µs against 0.85 µs per tick inside one call). _tick_loop_kept keeps both
# in arrays the caller owns between calls and redoes the start only when the bank
# changed since the last call.


@jit(fastmath=False)
def _new_work(n):
    """``(trig, parts)`` for :func:`_tick_loop_kept` over ``n`` oscillators.

    ``trig`` (4, n): sin φ, cos φ, and the phases and amplitudes they belong to;
    NaN there (equal to nothing) makes the first call start afresh.
    """
    trig = np.empty((4, n))
    trig[2:] = np.nan
    parts = np.zeros((2, (n + _CHUNK - 1) // _CHUNK))
    return trig, parts


# Not inline: inlined at Numba's IR level it would take its caller's fast-math
# flags, and a fastmath caller's trajectories would drift from prsc.run's in the
# last bits (measured: 23 of 64 phases after 50 ticks). A real call costs ~45 ns.
@jit(fastmath=False)
def _tick_loop_kept(phase, amplitude, frequency, steps, dt, coupling, decay, trig, parts):
    """:func:`_tick_loop_serial` with caller-owned work carried from call to call.

    When ``phase`` and ``amplitude`` equal what the last call left (rows 2-3
    of ``trig``), its sin/cos rows and ``parts`` are already those of the bank,
    so the start pass is skipped; otherwise (first call, or the caller excited
    or edited the bank) it is redone. Either way the ticks are the very ones of
    :func:`_tick_loop_serial`, so any split of N ticks into calls gives the same
    bits as one call. A sign of zero is the one difference ``==`` misses; it
    changes no tick (the start's sums and the coupling term absorb ``±0``).
    """
    n = phase.shape[0]
    if n == 0 or steps == 0:
        return
    sin_phase = trig[0]
    cos_phase = trig[1]
    seen_phase = trig[2]
    seen_amplitude = trig[3]
    same = 0
    for i in range(n):  # branch-free, so it vectorises; NaN never matches
        same += (phase[i] == seen_phase[i]) & (amplitude[i] == seen_amplitude[i])
    if same != n:
        for k in range(parts.shape[1]):
            _start_chunk(phase, amplitude, sin_phase, cos_phase, parts, k)
    gain = dt * coupling / n
    advance = TWO_PI * dt
    for _ in range(steps):
        _tick_serial(phase, amplitude, frequency, sin_phase, cos_phase, parts, advance, gain, decay)
    for i in range(n):
        seen_phase[i] = phase[i]
        seen_amplitude[i] = amplitude[i]
