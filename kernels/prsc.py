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

from sentient_kernels.checks import check_array, check_int, check_scalar
from sentient_kernels.config import jit
from sentient_kernels.prsc_tick import (
    TWO_PI,
    _chunk_mean_field,
    _chunk_start,
    _chunk_tick,
    _new_work,
    _run_serial_checked,
    _sincos,
    _tick_loop_kept,
    _tick_loop_parallel,
    _tick_loop_serial,
    _wrap_phase,
)

__all__ = [
    "DEFAULT_COUPLING",
    "DEFAULT_DAMPING",
    "DEFAULT_DT",
    "PARALLEL_MIN_OSCILLATORS",
    "ZERO_NORM",
    "PrscState",
    "PrscWork",
    "check_state",
    "coherence",
    "excite",
    "first_primes",
    "index_of_primes",
    "init_state",
    "new_work",
    "prime_state",
    "run",
    "run_with_work",
]

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


class PrscWork(NamedTuple):
    """Caller-owned work arrays of :func:`run_with_work`, made by :func:`new_work`.

    Attributes
    ----------
    trig : ndarray of float64, shape (4, N)
        sin φ, cos φ of the bank as the last call left it, and that bank's
        phases and amplitudes (to tell whether it changed since).
    parts : ndarray of float64, shape (2, ceil(N / 1024))
        Each block's share of the mean field.
    """

    trig: np.ndarray
    parts: np.ndarray


# --------------------------------------------------------------------------- kernels


# Tick kernels run with strict IEEE arithmetic (fastmath=False): reassociation
# would undo the two-constant argument reduction in _sincos, and the step loop
# vectorises without it (the reductions are split into fixed lanes by hand).


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

# Fast-path test of run(): exactly an ndarray with numpy's own dtype object
# (an identity test; an equal but distinct one takes the slow path), 1-D with
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
            and phase.dtype is _F64
            and amplitude.dtype is _F64
            and frequency.dtype is _F64
            and primes.dtype is _I64
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


def new_work(n: int) -> PrscWork:
    """Work arrays for :func:`run_with_work` on a bank of ``n`` oscillators.

    From ``@njit`` code, ``sentient_kernels.unchecked.prsc_new_work(n)`` returns the
    same two arrays as a tuple.
    """
    n = check_int("n", n, lo=0)
    return PrscWork(*_new_work(n))


def run_with_work(
    state: PrscState,
    steps: int,
    work: PrscWork,
    dt: float = DEFAULT_DT,
    coupling: float = DEFAULT_COUPLING,
    damping: float = DEFAULT_DAMPING,
) -> PrscState:
    """:func:`run` (serial) with caller-owned work, for many short calls on one bank.

    :func:`run` allocates its scratch and recomputes every oscillator's sin and
    cos before its first tick, on every call: for a one-tick call on 64
    oscillators that doubles the cost. Here the scratch is ``work``, kept from
    call to call, and the start pass is redone only when the bank's phases or
    amplitudes differ from what the last call on ``work`` left (the first call,
    or after :func:`excite` or any edit), so a call costs what its ticks cost.
    Trajectories are bit-identical to :func:`run`'s, however the ticks are
    split into calls. The kernel is ``sentient_kernels.unchecked.prsc_run_work``,
    for step-by-step loops inside ``@njit`` code.

    Parameters
    ----------
    state : PrscState
        Modified in place.
    steps : int
        Number of ticks (≥ 0).
    work : PrscWork
        From :func:`new_work` with the bank's N; use one per bank.
    dt, coupling, damping : float
        As for :func:`run`.

    Returns
    -------
    PrscState
        ``state`` itself.
    """
    check_state(state)
    n = state.phase.shape[0]
    if not isinstance(work, PrscWork):
        raise TypeError(f"work must be a PrscWork (see new_work), got {type(work).__name__}")
    check_array(
        "work.trig", work.trig, dtype=np.float64, shape=(4, n), finite=False, writeable=True
    )
    check_array(
        "work.parts",
        work.parts,
        dtype=np.float64,
        shape=(2, -(-n // 1024)),
        finite=False,
        writeable=True,
    )
    steps = check_int("steps", steps, lo=0)
    dt = check_scalar("dt", dt, lo=0.0, lo_open=True)
    coupling = check_scalar("coupling", coupling)
    damping = check_scalar("damping", damping, lo=0.0)
    decay = 1.0 - damping * dt
    if decay < 0.0:
        raise ValueError(f"damping*dt must be <= 1, got {damping * dt}")
    _tick_loop_kept(
        state.phase,
        state.amplitude,
        state.frequency,
        steps,
        dt,
        coupling,
        decay,
        work.trig,
        work.parts,
    )
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
    trig, parts = _new_work(16)
    _tick_loop_kept(
        state.phase, state.amplitude, state.frequency, 1, 1.0 / 60.0, 0.3, 0.99, trig, parts
    )
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
