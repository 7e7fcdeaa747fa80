"""Prime-resonance oscillators (PRSC): a bank of phase oscillators, one per prime.

Oscillator ``i`` carries a prime ``p_i``, a frequency ``f_i = 1 + ln(p_i)/10``,
a phase ``φ_i`` in [0, 2π) and an amplitude ``A_i`` in [0, 1]. One explicit
Euler tick of size ``dt`` uses only the old phases and amplitudes::

    φ_i += 2π f_i dt + dt (K/N) Σ_j w_j sin(φ_j − φ_i),   w_j = min(1, A_j + 0.1)
    φ_i  = φ_i mod 2π
    A_i *= 1 − damping·dt;  A_i < 1e-10 → 0

The coupling sum is evaluated in O(N) through the mean field,
``Σ_j w_j sin(φ_j − φ_i) = cos φ_i S − sin φ_i C`` with ``S = Σ w sin φ`` and
``C = Σ w cos φ``, so a tick costs one sin and one cos per oscillator.
:func:`run` advances many ticks in one kernel call, in place. Inside it,
sin and cos come from a branch-free polynomial (within ~1 ulp of libm on
[0, 2π]) so the tick loop vectorises; the mean field is summed in fixed
blocks, so serial and threaded runs give bit-identical results.
"""

from __future__ import annotations

import math
import sys
from typing import NamedTuple

import numpy as np
from numba import prange

from kernels.checks import check_array, check_int, check_scalar
from kernels.config import jit

__all__ = [
    "DEFAULT_COUPLING",
    "DEFAULT_DAMPING",
    "DEFAULT_DT",
    "PARALLEL_MIN_OSCILLATORS",
    "ZERO_NORM",
    "PrscState",
    "check_state",
    "coherence",
    "excite",
    "first_primes",
    "index_of_primes",
    "init_state",
    "prime_state",
    "run",
]

TWO_PI = 2.0 * math.pi
# Amplitudes below this are snapped to exactly zero after each tick.
_AMPLITUDE_FLOOR = 1e-10
#: A prime state whose L2 norm is at most this is returned as all zeros.
ZERO_NORM = 1e-12
# From this many oscillators on, run() splits each tick over threads by
# default. A tick needs the whole bank's mean field, so the threads meet at a
# barrier every tick, and one descheduled thread stalls the tick. On the
# 2-core dev machine with other jobs running, the parallel kernel was slower
# than the serial one (median) at every N from 10k to 1M (1.2-5×; with the
# OpenMP layer up to 100× at 10k), so only very large banks use it unless
# run(parallel=True) asks for it.
PARALLEL_MIN_OSCILLATORS = 1 << 18
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


class PrscState(NamedTuple):
    """Oscillator bank as four C-contiguous ``(N,)`` arrays.

    Attributes
    ----------
    phase : ndarray of float64
        Phases in radians, kept in [0, 2π) by :func:`run`.
    amplitude : ndarray of float64
        Amplitudes, ≥ 0.
    frequency : ndarray of float64
        Natural frequencies in Hz (cycles per unit time).
    primes : ndarray of int64
        The prime of each oscillator.
    """

    phase: np.ndarray
    amplitude: np.ndarray
    frequency: np.ndarray
    primes: np.ndarray


# --------------------------------------------------------------------------- kernels


# Tick kernels run with strict IEEE arithmetic (fastmath=False): reassociation
# would undo the two-constant argument reduction in _sincos, and the step loop
# vectorises without it (the reductions are split into fixed lanes by hand).


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


@jit(fastmath=False)
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


@jit(fastmath=False)
def _tick_loop_serial(phase, amplitude, frequency, steps, dt, coupling, decay):
    n = phase.shape[0]
    if n == 0 or steps == 0:
        return
    n_chunks = (n + _CHUNK - 1) // _CHUNK
    sin_phase = np.empty(n)
    cos_phase = np.empty(n)
    part_sin = np.empty(n_chunks)
    part_cos = np.empty(n_chunks)
    for k in range(n_chunks):
        lo = k * _CHUNK
        hi = min(n, lo + _CHUNK)
        part_sin[k], part_cos[k] = _chunk_start(
            phase[lo:hi], amplitude[lo:hi], sin_phase[lo:hi], cos_phase[lo:hi]
        )
    gain = dt * coupling / n
    advance = TWO_PI * dt
    if n_chunks == 1:
        # Small bank: skip the per-tick slicing (reference counting) overhead.
        w_sin = part_sin[0]
        w_cos = part_cos[0]
        for _ in range(steps):
            w_sin, w_cos = _chunk_tick(
                phase,
                amplitude,
                frequency,
                sin_phase,
                cos_phase,
                advance,
                gain,
                w_sin,
                w_cos,
                decay,
            )
        return
    for _ in range(steps):
        w_sin = 0.0
        w_cos = 0.0
        for k in range(n_chunks):
            w_sin += part_sin[k]
            w_cos += part_cos[k]
        for k in range(n_chunks):
            lo = k * _CHUNK
            hi = min(n, lo + _CHUNK)
            part_sin[k], part_cos[k] = _chunk_tick(
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


@jit(parallel=True, fastmath=False)
def _tick_loop_parallel(phase, amplitude, frequency, steps, dt, coupling, decay):
    # Same chunks and summation order as _tick_loop_serial (bit-identical
    # results); chunks of one tick run in parallel, ticks in sequence.
    n = phase.shape[0]
    if n == 0 or steps == 0:
        return
    n_chunks = (n + _CHUNK - 1) // _CHUNK
    sin_phase = np.empty(n)
    cos_phase = np.empty(n)
    part_sin = np.empty(n_chunks)
    part_cos = np.empty(n_chunks)
    for k in prange(n_chunks):
        lo = k * _CHUNK
        hi = min(n, lo + _CHUNK)
        part_sin[k], part_cos[k] = _chunk_start(
            phase[lo:hi], amplitude[lo:hi], sin_phase[lo:hi], cos_phase[lo:hi]
        )
    gain = dt * coupling / n
    advance = TWO_PI * dt
    for _ in range(steps):
        w_sin = 0.0
        w_cos = 0.0
        for k in range(n_chunks):
            w_sin += part_sin[k]
            w_cos += part_cos[k]
        for k in prange(n_chunks):
            lo = k * _CHUNK
            hi = min(n, lo + _CHUNK)
            part_sin[k], part_cos[k] = _chunk_tick(
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


@jit()
def _coherence(phase, amplitude):
    n = phase.shape[0]
    re = 0.0
    im = 0.0
    total = 0.0
    for i in range(n):
        w = max(0.1, amplitude[i])
        re += w * math.cos(phase[i])
        im += w * math.sin(phase[i])
        total += w
    if total <= 0.0:
        return 0.0
    return math.sqrt(re * re + im * im) / total


@jit()
def _excite(phase, amplitude, indices, amounts, target_phase, pull, use_target):
    for k in range(indices.shape[0]):
        i = indices[k]
        amplitude[i] = min(1.0, amplitude[i] + amounts[k])
        if use_target:
            # Signed shortest arc from φ to the target, in [−π, π).
            d = target_phase[k] - phase[i] + math.pi
            d = d - TWO_PI * math.floor(d / TWO_PI) - math.pi
            phase[i] = _wrap_phase(phase[i] + pull * d)


@jit()
def _prime_state(phase, amplitude, zero_norm):
    n = phase.shape[0]
    out = np.empty(n, dtype=np.complex128)
    sq = 0.0
    for i in range(n):
        a = amplitude[i]
        out[i] = complex(a * math.cos(phase[i]), a * math.sin(phase[i]))
        sq += out[i].real * out[i].real + out[i].imag * out[i].imag
    norm = math.sqrt(sq)
    if norm <= zero_norm:
        for i in range(n):
            out[i] = 0.0
        return out
    inv = 1.0 / norm
    for i in range(n):
        out[i] = out[i] * inv
    return out


# --------------------------------------------------------------------------- wrappers

# Fast-path test of run(): exactly an ndarray of the native dtype, 1-D with
# unit stride (so C-contiguous); anything else takes the full checks.
_NDARRAY = np.ndarray
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_VECTOR_STRIDES = (8,)
_MAX_FLOAT = sys.float_info.max

#: Defaults of :func:`run` (tick length, coupling K, amplitude damping rate).
DEFAULT_DT = 1.0 / 60.0
DEFAULT_COUPLING = 0.3
DEFAULT_DAMPING = 0.02
_DEFAULT_DECAY = 1.0 - DEFAULT_DAMPING * DEFAULT_DT


def check_state(state: object, name: str = "state") -> PrscState:
    """Validate an oscillator bank and return it unchanged.

    Parameters
    ----------
    state : PrscState
        Four C-contiguous (N,) arrays: float64 phase, amplitude and frequency
        (finite; amplitudes ≥ 0) and int64 primes.
    name : str
        Name used in error messages (``"state"`` gives ``state.phase`` etc.).

    Raises
    ------
    TypeError
        If ``state`` is not a :class:`PrscState` or an array has the wrong dtype.
    ValueError
        If an array has the wrong shape or layout, a non-finite value, or a
        negative amplitude.
    """
    if not isinstance(state, PrscState):
        raise TypeError(f"{name} must be a PrscState, got {type(state).__name__}")
    phase = check_array(f"{name}.phase", state.phase, dtype=np.float64, ndim=1)
    n = phase.shape[0]
    amplitude = check_array(f"{name}.amplitude", state.amplitude, dtype=np.float64, shape=(n,))
    check_array(f"{name}.frequency", state.frequency, dtype=np.float64, shape=(n,))
    check_array(f"{name}.primes", state.primes, dtype=np.int64, shape=(n,))
    if n and amplitude.min() < 0.0:
        raise ValueError(f"{name}.amplitude must be >= 0, got min {amplitude.min()}")
    return state


def first_primes(n: int) -> np.ndarray:
    """Return the first ``n`` primes as an int64 array (``first_primes(64)`` ends at 311)."""
    n = check_int("n", n, lo=0)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    # Rosser's bound p_n < n (ln n + ln ln n) for n ≥ 6.
    limit = 15 if n < 6 else int(n * (math.log(n) + math.log(math.log(n)))) + 1
    sieve = np.ones(limit + 1, dtype=bool)
    sieve[:2] = False
    for p in range(2, math.isqrt(limit) + 1):
        if sieve[p]:
            sieve[p * p :: p] = False
    return np.flatnonzero(sieve)[:n].astype(np.int64)


def init_state(n: int = 64, seed: int = 0) -> PrscState:
    """Build a bank of ``n`` oscillators on the first ``n`` primes.

    ``f_p = 1 + ln(p)/10``; phases uniform in [0, 2π) and amplitudes from
    ``np.random.default_rng(seed)`` (phases drawn first): ``0.05 + 0.05U`` for
    the first 8 oscillators, ``0.01U`` for the rest.

    Parameters
    ----------
    n : int
        Number of oscillators (≥ 0).
    seed : int
        Seed of the generator (≥ 0); the same seed gives the same state.

    Returns
    -------
    PrscState
    """
    n = check_int("n", n, lo=0)
    seed = check_int("seed", seed, lo=0)
    primes = first_primes(n)
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0.0, TWO_PI, n)
    phase[phase >= TWO_PI] = 0.0  # uniform() may round up to the open end
    u = rng.random(n)
    amplitude = 0.01 * u
    amplitude[:8] = 0.05 + 0.05 * u[:8]
    frequency = 1.0 + np.log(primes.astype(np.float64)) / 10.0
    return PrscState(phase, amplitude, frequency, primes)


def run(
    state: PrscState,
    steps: int,
    dt: float = DEFAULT_DT,
    coupling: float = DEFAULT_COUPLING,
    damping: float = DEFAULT_DAMPING,
    parallel: bool | None = None,
) -> PrscState:
    """Advance the bank by ``steps`` Euler ticks in one kernel call, in place.

    Parameters
    ----------
    state : PrscState
        Modified in place (phase and amplitude).
    steps : int
        Number of ticks (≥ 0; 0 is a no-op).
    dt : float
        Tick length (> 0).
    coupling : float
        Coupling strength K (finite, any sign).
    damping : float
        Amplitude decay rate; each tick multiplies A by ``1 − damping·dt``,
        which must lie in [0, 1].
    parallel : bool or None
        Split each tick's oscillators over threads. ``None`` (default): only
        when N ≥ :data:`PARALLEL_MIN_OSCILLATORS`. Results are bit-identical
        either way (same blocks, same summation order).

    Returns
    -------
    PrscState
        ``state`` itself.

    Notes
    -----
    A call on a well-formed bank (Python ``int``/``float`` arguments, arrays as
    :func:`init_state` makes them) checks the arrays inside the kernel call,
    so it costs well under 1 µs more than the kernel; anything else takes the
    full checks, which name the bad argument.
    """
    if state.__class__ is PrscState and steps.__class__ is int and steps >= 0:
        if dt is DEFAULT_DT and coupling is DEFAULT_COUPLING and damping is DEFAULT_DAMPING:
            decay = _DEFAULT_DECAY
        elif (
            dt.__class__ is float
            and 0.0 < dt <= _MAX_FLOAT
            and coupling.__class__ is float
            and -_MAX_FLOAT <= coupling <= _MAX_FLOAT
            and damping.__class__ is float
            and 0.0 <= damping <= _MAX_FLOAT
        ):
            decay = 1.0 - damping * dt
        else:
            decay = -1.0  # not plain floats: the full checks below
        phase, amplitude, frequency, primes = state
        if (
            decay >= 0.0
            and phase.__class__ is _NDARRAY
            and amplitude.__class__ is _NDARRAY
            and frequency.__class__ is _NDARRAY
            and primes.__class__ is _NDARRAY
            and phase.dtype == _F64
            and amplitude.dtype == _F64
            and frequency.dtype == _F64
            and primes.dtype == _I64
            and phase.strides == _VECTOR_STRIDES
            and amplitude.strides == _VECTOR_STRIDES
            and frequency.strides == _VECTOR_STRIDES
            and primes.strides == _VECTOR_STRIDES
            and (
                parallel is False
                or (parallel is None and phase.shape[0] < PARALLEL_MIN_OSCILLATORS)
            )
            and not _run_serial_checked(
                phase, amplitude, frequency, len(primes), steps, dt, coupling, decay
            )
        ):
            return state
    check_state(state)
    steps = check_int("steps", steps, lo=0)
    dt = check_scalar("dt", dt, lo=0.0, lo_open=True)
    coupling = check_scalar("coupling", coupling)
    damping = check_scalar("damping", damping, lo=0.0)
    decay = 1.0 - damping * dt
    if decay < 0.0:
        raise ValueError(f"damping*dt must be <= 1, got {damping * dt}")
    if parallel is None:
        parallel = state.phase.shape[0] >= PARALLEL_MIN_OSCILLATORS
    elif not isinstance(parallel, bool):
        raise TypeError(f"parallel must be a bool or None, got {type(parallel).__name__}")
    kernel = _tick_loop_parallel if parallel else _tick_loop_serial
    kernel(state.phase, state.amplitude, state.frequency, steps, dt, coupling, decay)
    return state


def coherence(phase: np.ndarray, amplitude: np.ndarray) -> float:
    """Weighted phase coherence ``|Σ w e^{iφ}| / Σ w`` with ``w = max(0.1, A)``.

    Parameters
    ----------
    phase, amplitude : ndarray of float64, shape (N,)

    Returns
    -------
    float
        In [0, 1]; 0 for an empty bank.
    """
    phase = check_array("phase", phase, dtype=np.float64, ndim=1)
    check_array("amplitude", amplitude, dtype=np.float64, shape=(phase.shape[0],))
    return float(_coherence(phase, amplitude))


def excite(
    state: PrscState,
    indices: np.ndarray,
    amount: float | np.ndarray,
    target_phase: np.ndarray | None = None,
    pull: float = 0.0,
) -> PrscState:
    """Raise amplitudes (and optionally pull phases) of selected oscillators, in place.

    For each ``k`` in order: ``A[i] = min(1, A[i] + amount[k])`` with
    ``i = indices[k]`` (repeated indices accumulate). If ``target_phase`` is
    given, ``φ[i]`` then moves by ``pull · d`` where ``d`` is the signed
    shortest arc to ``target_phase[k]`` in [−π, π) (an exactly opposite target
    is approached by decreasing φ), and is wrapped to [0, 2π).

    Parameters
    ----------
    state : PrscState
    indices : ndarray of int64, shape (E,)
        Oscillator indices in [0, N) (see :func:`index_of_primes`).
    amount : float or ndarray of float64, shape (E,)
        Non-negative amplitude increments.
    target_phase : ndarray of float64, shape (E,), optional
        Phase to pull toward, one per index (any finite value).
    pull : float
        Fraction of the arc to move, in [0, 1].

    Returns
    -------
    PrscState
        ``state`` itself.
    """
    check_state(state)
    n = state.phase.shape[0]
    indices = check_array("indices", indices, dtype=np.int64, ndim=1)
    e = indices.shape[0]
    if e and (indices.min() < 0 or indices.max() >= n):
        raise ValueError(
            f"indices must lie in [0, {n}), got range [{indices.min()}, {indices.max()}]"
        )
    if isinstance(amount, np.ndarray):
        amounts = check_array("amount", amount, dtype=np.float64, shape=(e,))
        if e and amounts.min() < 0.0:
            raise ValueError(f"amount must be >= 0, got min {amounts.min()}")
    else:
        amounts = np.full(e, check_scalar("amount", amount, lo=0.0))
    pull = check_scalar("pull", pull, lo=0.0, hi=1.0)
    if target_phase is None:
        targets = np.zeros(e)
        use_target = False
    else:
        targets = check_array("target_phase", target_phase, dtype=np.float64, shape=(e,))
        use_target = True
    _excite(state.phase, state.amplitude, indices, amounts, targets, pull, use_target)
    return state


def prime_state(state: PrscState) -> np.ndarray:
    """Return ``α_p = A_p e^{iφ_p}`` normalized to unit L2 norm (complex128, shape (N,)).

    All zeros if the norm is at most 1e-12 (e.g. every amplitude is 0).
    """
    check_state(state)
    return _prime_state(state.phase, state.amplitude, ZERO_NORM)


def index_of_primes(state: PrscState, primes: np.ndarray) -> np.ndarray:
    """Map primes to oscillator indices of ``state``.

    Parameters
    ----------
    state : PrscState
    primes : ndarray of int64, shape (K,)

    Returns
    -------
    ndarray of int64, shape (K,)
        Index of each prime in ``state.primes``, or −1 if the bank has no
        oscillator for it. Filter with ``idx[idx >= 0]`` before :func:`excite`.
    """
    check_state(state)
    primes = check_array("primes", primes, dtype=np.int64, ndim=1)
    bank = state.primes
    out = np.full(primes.shape[0], -1, dtype=np.int64)
    if bank.shape[0] == 0 or primes.shape[0] == 0:
        return out
    order = np.argsort(bank, kind="stable")
    pos = np.searchsorted(bank, primes, sorter=order)
    pos = np.minimum(pos, bank.shape[0] - 1)
    found = bank[order[pos]] == primes
    out[found] = order[pos[found]]
    return out


def _warmup() -> None:
    state = init_state(16, seed=0)
    _tick_loop_serial(state.phase, state.amplitude, state.frequency, 1, 1.0 / 60.0, 0.3, 0.99)
    _tick_loop_parallel(state.phase, state.amplitude, state.frequency, 1, 1.0 / 60.0, 0.3, 0.99)
    _run_serial_checked(state.phase, state.amplitude, state.frequency, 16, 1, 1.0 / 60.0, 0.3, 0.99)
    _sincos(1.0)
    sin_phase, cos_phase = np.empty(16), np.empty(16)
    _chunk_start(state.phase, state.amplitude, sin_phase, cos_phase)
    _chunk_tick(
        state.phase,
        state.amplitude,
        state.frequency,
        sin_phase,
        cos_phase,
        0.1,
        0.01,
        0.5,
        0.5,
        0.99,
    )
    _chunk_mean_field(state.amplitude, sin_phase, cos_phase)
    _coherence(state.phase, state.amplitude)
    idx = np.array([0, 1], dtype=np.int64)
    _excite(state.phase, state.amplitude, idx, np.full(2, 0.1), np.zeros(2), 0.5, True)
    _prime_state(state.phase, state.amplitude, ZERO_NORM)
    _wrap_phase(1.0)
