"""Sedenion Memory Field: a unit sedenion whose 16 axes are named (:data:`AXES`).

The field starts at e0 (pure coherence) and is pulled every observer tick toward a
target Δ computed from the oscillator bank's amplitudes and phases (SPEC §1):
``s ← normalize((1 − η) s + η Δ)``. :func:`update_batch` applies many ticks in
one kernel call; :func:`update_trig` takes cos/sin of the phases when the caller
already has them (the oscillator tick computes them anyway).

Constants and thresholds are those of SPEC §1; where the spec says "~0" we use the
field's own floor, 1e-10, on the relevant norm.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from sentient_kernels import checks
from sentient_kernels.checks import check_array, check_scalar, is_out_vector
from sentient_kernels.config import jit
from sentient_kernels.smf_delta import (
    _delta_phase,
    _delta_phase_once,
    _delta_trig_once,
)

__all__ = [
    "AXES",
    "DIM",
    "delta",
    "delta_trig",
    "entropy",
    "initial",
    "normalize",
    "similarity",
    "similarity_pair",
    "update",
    "update_batch",
    "update_trig",
]

DIM = 16
AXES: tuple[str, ...] = (
    "coherence",
    "identity",
    "duality",
    "structure",
    "change",
    "life",
    "harmony",
    "wisdom",
    "infinity",
    "creation",
    "truth",
    "love",
    "power",
    "time",
    "space",
    "consciousness",
)
#: Norm floor of :func:`normalize`, :func:`similarity`, :func:`entropy` and the prime state.
EPS = 1e-10
#: An oscillator is active when its amplitude exceeds this.
ACTIVE_AMPLITUDE = 0.1
DEFAULT_ETA = 0.1


# ---------------------------------------------------------------------------
# Δ from the oscillator bank.


@jit()
def _blend_normalize(s, delta, eta, out, eps):
    """out = normalize((1 − η) s + η Δ); ``out`` may be ``s``."""
    keep = 1.0 - eta
    acc = 0.0
    for k in range(16):
        v = keep * s[k] + eta * delta[k]
        out[k] = v
        acc += v * v
    scale = 1.0 / max(np.sqrt(acc), eps)
    for k in range(16):
        out[k] *= scale


@jit()
def _update_phase(s, amp, phase, eta, out, eps, active):
    """One update into ``out`` (which may be ``s``); returns 0 when done.

    Returns 1 if ``s`` or ``out`` is not (16,) or ``phase`` is not as long as
    ``amp``, 2 if ``s``, ``amp`` or ``phase`` holds NaN or ±inf; ``out`` is
    then untouched.
    """
    n = amp.shape[0]
    if s.shape[0] != 16 or out.shape[0] != 16 or phase.shape[0] != n:
        return 1
    if (
        checks.count_finite(s) != 16
        or checks.count_finite(amp) != n
        or checks.count_finite(phase) != n
    ):
        return 2
    delta = np.empty(16)
    _delta_phase_once(amp, phase, delta, eps, active)
    _blend_normalize(s, delta, eta, out, eps)
    return 0


@jit()
def _update_trig(s, amp, cos_phase, sin_phase, eta, out, eps, active):
    delta = np.empty(16)
    _delta_trig_once(amp, cos_phase, sin_phase, delta, eps, active)
    _blend_normalize(s, delta, eta, out, eps)


@jit()
def _update_batch(s, amps, phases, eta, out, trajectory, eps, active):
    """B sequential updates starting from ``s``; final state in ``out`` (16,).

    ``trajectory`` is (B, 16) to record every state, or (0, 16) to skip that.
    """
    n = amps.shape[1]
    delta = np.empty(16)
    work = np.empty((3, n))
    int_work = np.empty(n, np.int64)
    out[:] = s
    record = trajectory.shape[0] > 0
    for b in range(amps.shape[0]):
        _delta_phase(amps[b], phases[b], delta, work, int_work, eps, active)
        _blend_normalize(out, delta, eta, out, eps)
        if record:
            trajectory[b, :] = out


@jit()
def _normalize(s, out, eps):
    acc = 0.0
    for k in range(16):
        acc += s[k] * s[k]
    scale = 1.0 / max(np.sqrt(acc), eps)
    for k in range(16):
        out[k] = s[k] * scale


@jit()
def _entropy(s, eps):
    mass = 0.0
    for k in range(16):
        mass += abs(s[k])
    if mass < eps:
        return 0.0
    inv_mass = 1.0 / mass
    h = 0.0
    for k in range(16):
        p = abs(s[k]) * inv_mass
        if p > eps:
            h -= p * np.log(p)
    return h


@jit()
def _entropy_checked(s, eps):
    """:func:`_entropy`, or NaN if ``s`` is not (16,) or holds NaN or ±inf."""
    if s.shape[0] != 16 or checks.count_finite(s) != 16:
        return np.nan
    return _entropy(s, eps)


@jit()
def _cosine_to_row(s, s_norm, others, r, eps):
    dot = 0.0
    oo = 0.0
    for k in range(16):
        dot += s[k] * others[r, k]
        oo += others[r, k] * others[r, k]
    row_norm = np.sqrt(oo)
    return 0.0 if (s_norm < eps or row_norm < eps) else np.divide(dot, s_norm * row_norm)


@jit(parallel=True)
def _similarity_rows(s, others, out, eps):
    """Cosines of ``s`` against every row; returns the number of NaN results.

    A row holding NaN or ±inf always yields NaN when |s| ≥ eps, so the count
    lets the wrapper skip a separate finiteness sweep over ``others``.
    """
    s_norm = np.sqrt(np.sum(s * s))
    n_nan = 0
    for r in prange(others.shape[0]):
        value = _cosine_to_row(s, s_norm, others, r, eps)
        out[r] = value
        n_nan += value != value
    return n_nan


@jit()
def _similarity_rows_serial(s, others, out, eps):
    """Cosines of ``s`` against every row; returns 0 if every input was finite.

    Otherwise returns -1 (nothing written) if ``s`` is not a finite (16,)
    field, ``others`` not (M, 16) or ``out`` not (M,); -2 if |s| < ``eps``
    (every result is 0 and ``others`` was not inspected); else the number of
    NaN results, which is positive when a row holds NaN or ±inf (or |row|²
    overflows).
    """
    m = others.shape[0]
    if (
        s.shape[0] != 16
        or others.shape[1] != 16
        or out.shape[0] != m
        or checks.count_finite(s) != 16
    ):
        return -1
    s_norm = np.sqrt(np.sum(s * s))
    n_nan = 0
    for r in range(m):
        value = _cosine_to_row(s, s_norm, others, r, eps)
        out[r] = value
        n_nan += value != value
    if s_norm < eps:
        return -2
    return n_nan


@jit()
def _cosine_pair(a, b, eps):
    """Cosine of two fields (16,) as :func:`_similarity_rows_serial` computes it.

    NaN if a shape is not (16,) or a value is NaN or ±inf (or |x|² overflows).
    """
    if (
        a.shape[0] != 16
        or b.shape[0] != 16
        or checks.count_finite(a) != 16
        or checks.count_finite(b) != 16
    ):
        return np.nan
    return _cosine_to_row(a, np.sqrt(np.sum(a * a)), b.reshape((1, 16)), 0, eps)


# Below this many rows the thread launch costs more than it saves.
_PARALLEL_MIN_ROWS = 4096


# ---------------------------------------------------------------------------
# Public wrappers.
#
# Single-call wrappers first test for the common case (exactly an ndarray,
# numpy's own float64 dtype object, unit stride; an output also writeable):
# such arrays go straight to a kernel that checks shapes and finiteness itself
# and reports a status. Anything else, or a bad status, takes the full checks
# of sentient_kernels.checks, which raise naming the argument. The fast test is a
# sufficient condition only: everything the full checks accept still works,
# just slower (an equal but distinct dtype object, a subclass). The input
# tests are written out inline, cheapest first, because a helper call would
# cost as much as the tests themselves; a given out= goes through the shared
# checks.is_out_vector, whose call costs less than the allocation it saves.
# No message is built here: those are for the slow path.

_NDARRAY = np.ndarray
_F64 = np.dtype(np.float64)
_VECTOR_STRIDES = (8,)
_ROW_STRIDES = (8 * DIM, 8)


def _check_state(name: str, s: object) -> np.ndarray:
    return check_array(name, s, dtype=np.float64, shape=(DIM,))


def _check_oscillators(amplitude: object, phase: object, phase_name: str = "phase"):
    amplitude = check_array("amplitude", amplitude, dtype=np.float64, ndim=1)
    phase = check_array(phase_name, phase, dtype=np.float64, shape=amplitude.shape)
    return amplitude, phase


def _check_eta(eta: object) -> float:
    return check_scalar("eta", eta, lo=0.0, hi=1.0)


def _check_out(out: object, n: int = DIM) -> np.ndarray:
    return check_array("out", out, dtype=np.float64, shape=(n,), finite=False, writeable=True)


def initial() -> np.ndarray:
    """The starting field e0 (coherence = 1), a new (16,) float64 array."""
    s = np.zeros(DIM)
    s[0] = 1.0
    return s


def normalize(s: np.ndarray) -> np.ndarray:
    """``s / max(|s|, 1e-10)`` (new array; a zero field stays zero)."""
    s = _check_state("s", s)
    out = np.empty(DIM)
    _normalize(s, out, EPS)
    return out


def entropy(s: np.ndarray) -> float:
    """Shannon entropy (nats) of π_k = |s_k| / Σ|s_j| over π_k > 1e-10; 0 if Σ|s| < 1e-10."""
    # A scalar result: nothing is allocated, so there is no ``out=`` to offer.
    if s.__class__ is _NDARRAY and s.dtype is _F64 and s.strides == _VECTOR_STRIDES:
        h = _entropy_checked(s, EPS)
        if h == h:
            return h
    s = _check_state("s", s)
    return float(_entropy(s, EPS))


def similarity(s: np.ndarray, others: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Cosine of one field against many, parallel over rows.

    Parameters
    ----------
    s : numpy.ndarray
        float64 (16,).
    others : numpy.ndarray
        float64 (M, 16), C-contiguous.
    out : numpy.ndarray, optional
        float64 (M,), C-contiguous, writeable destination.

    Returns
    -------
    numpy.ndarray
        (M,) cosines; 0 where either norm is below 1e-10.

    Raises
    ------
    ValueError
        If ``others`` holds NaN or inf (detected during the pass, so a given
        ``out`` has been written by then).
    """
    if (
        s.__class__ is _NDARRAY
        and others.__class__ is _NDARRAY
        and s.dtype is _F64
        and others.dtype is _F64
        and s.strides == _VECTOR_STRIDES
        and others.strides == _ROW_STRIDES
        and others.shape[0] < _PARALLEL_MIN_ROWS
    ):
        if out is None:
            fast_out = np.empty(others.shape[0])
            if _similarity_rows_serial(s, others, fast_out, EPS) == 0:
                return fast_out
        elif is_out_vector(out) and _similarity_rows_serial(s, others, out, EPS) == 0:
            return out
    s = _check_state("s", s)
    # Finiteness of ``others`` is checked by the kernel (NaN results, see
    # _similarity_rows), or by a sweep when |s| < 1e-10 makes every result 0.
    others = check_array("others", others, dtype=np.float64, shape=(None, DIM), finite=False)
    m = others.shape[0]
    out = np.empty(m) if out is None else _check_out(out, m)
    if m >= _PARALLEL_MIN_ROWS:
        n_nan = _similarity_rows(s, others, out, EPS)
        if n_nan > 0 or np.linalg.norm(s) < EPS:
            check_array("others", others, dtype=np.float64)
    elif _similarity_rows_serial(s, others, out, EPS) != 0:
        check_array("others", others, dtype=np.float64)
    return out


def similarity_pair(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two fields (16,); 0 if either norm is below 1e-10."""
    if (
        a.__class__ is _NDARRAY
        and b.__class__ is _NDARRAY
        and a.dtype is _F64
        and b.dtype is _F64
        and a.strides == _VECTOR_STRIDES
        and b.strides == _VECTOR_STRIDES
    ):
        value = _cosine_pair(a, b, EPS)
        if value == value:
            return value
    a = _check_state("a", a)
    b = _check_state("b", b)
    return float(_cosine_pair(a, b, EPS))


def delta(amplitude: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """Target Δ (16,) of the field for one oscillator state (SPEC §1).

    Parameters
    ----------
    amplitude, phase : numpy.ndarray
        float64 (N,), N ≥ 0. With N = 0, Δ = 0.1·e0.

    Notes
    -----
    σ² is the population variance; R = |Σ_{A>0.1} e^{iφ}| / n_a (0 if no
    oscillator is active); H_ψ is the log2 entropy of p_k = A_k² / ΣA² (the
    normalized prime state |α_p|²), taken as 0 when |α| = √ΣA² < 1e-10.
    """
    amplitude, phase = _check_oscillators(amplitude, phase)
    out = np.empty(DIM)
    _delta_phase_once(amplitude, phase, out, EPS, ACTIVE_AMPLITUDE)
    return out


def delta_trig(amplitude: np.ndarray, cos_phase: np.ndarray, sin_phase: np.ndarray) -> np.ndarray:
    """:func:`delta` from amplitudes and precomputed ``cos(phase)``, ``sin(phase)`` (N,)."""
    amplitude, cos_phase = _check_oscillators(amplitude, cos_phase, "cos_phase")
    sin_phase = check_array("sin_phase", sin_phase, dtype=np.float64, shape=amplitude.shape)
    out = np.empty(DIM)
    _delta_trig_once(amplitude, cos_phase, sin_phase, out, EPS, ACTIVE_AMPLITUDE)
    return out


def update(
    s: np.ndarray,
    amplitude: np.ndarray,
    phase: np.ndarray,
    eta: float = DEFAULT_ETA,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """One tick: ``normalize((1 − η) s + η Δ(amplitude, phase))``.

    Parameters
    ----------
    s : numpy.ndarray
        float64 (16,) current field.
    amplitude, phase : numpy.ndarray
        float64 (N,) oscillator state.
    eta : float
        Blend rate in [0, 1].
    out : numpy.ndarray, optional
        float64 (16,), C-contiguous, writeable destination; may be ``s``
        itself (in-place update). Left as it was when an argument is bad.

    Returns
    -------
    numpy.ndarray
        ``out`` (a new array if not given).
    """
    if (
        s.__class__ is _NDARRAY
        and amplitude.__class__ is _NDARRAY
        and phase.__class__ is _NDARRAY
        and s.dtype is _F64
        and amplitude.dtype is _F64
        and phase.dtype is _F64
        and s.strides == _VECTOR_STRIDES
        and amplitude.strides == _VECTOR_STRIDES
        and phase.strides == _VECTOR_STRIDES
        and eta.__class__ is float
        and 0.0 <= eta <= 1.0
    ):
        if out is None:
            fast_out = np.empty(DIM)
            if not _update_phase(s, amplitude, phase, eta, fast_out, EPS, ACTIVE_AMPLITUDE):
                return fast_out
        elif is_out_vector(out) and not _update_phase(
            s, amplitude, phase, eta, out, EPS, ACTIVE_AMPLITUDE
        ):
            return out
    s = _check_state("s", s)
    amplitude, phase = _check_oscillators(amplitude, phase)
    eta = _check_eta(eta)
    out = np.empty(DIM) if out is None else _check_out(out)
    _update_phase(s, amplitude, phase, eta, out, EPS, ACTIVE_AMPLITUDE)
    return out


def update_trig(
    s: np.ndarray,
    amplitude: np.ndarray,
    cos_phase: np.ndarray,
    sin_phase: np.ndarray,
    eta: float = DEFAULT_ETA,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`update` from precomputed ``cos(phase)`` and ``sin(phase)`` (N,)."""
    s = _check_state("s", s)
    amplitude, cos_phase = _check_oscillators(amplitude, cos_phase, "cos_phase")
    sin_phase = check_array("sin_phase", sin_phase, dtype=np.float64, shape=amplitude.shape)
    eta = _check_eta(eta)
    out = np.empty(DIM) if out is None else _check_out(out)
    _update_trig(s, amplitude, cos_phase, sin_phase, eta, out, EPS, ACTIVE_AMPLITUDE)
    return out


def update_batch(
    s: np.ndarray,
    amplitudes: np.ndarray,
    phases: np.ndarray,
    eta: float = DEFAULT_ETA,
    trajectory: np.ndarray | None = None,
) -> np.ndarray:
    """Apply B sequential updates in one kernel call.

    Parameters
    ----------
    s : numpy.ndarray
        float64 (16,) starting field (not modified).
    amplitudes, phases : numpy.ndarray
        float64 (B, N): the oscillator state seen by each tick.
    eta : float
        Blend rate in [0, 1].
    trajectory : numpy.ndarray, optional
        float64 (B, 16); row b receives the field after update b.

    Returns
    -------
    numpy.ndarray
        New (16,) array: the field after the last update (``s`` copied if B = 0).
    """
    s = _check_state("s", s)
    amplitudes = check_array("amplitudes", amplitudes, dtype=np.float64, ndim=2)
    phases = check_array("phases", phases, dtype=np.float64, shape=amplitudes.shape)
    eta = _check_eta(eta)
    n_updates = amplitudes.shape[0]
    if trajectory is None:
        trajectory = np.empty((0, DIM))
    else:
        trajectory = check_array(
            "trajectory", trajectory, dtype=np.float64, shape=(n_updates, DIM), finite=False
        )
    out = np.empty(DIM)
    _update_batch(s, amplitudes, phases, eta, out, trajectory, EPS, ACTIVE_AMPLITUDE)
    return out


def _warmup() -> None:
    """Compile every kernel for the signatures used by the wrappers."""
    s = initial()
    amp = np.array([0.5, 0.05, 0.0, 0.3])
    phase = np.array([0.1, 1.0, 2.0, 3.0])
    out = np.empty(DIM)
    _delta_phase_once(amp, phase, out, EPS, ACTIVE_AMPLITUDE)
    _delta_trig_once(amp, np.cos(phase), np.sin(phase), out, EPS, ACTIVE_AMPLITUDE)
    _update_phase(s, amp, phase, DEFAULT_ETA, out, EPS, ACTIVE_AMPLITUDE)
    _update_trig(s, amp, np.cos(phase), np.sin(phase), DEFAULT_ETA, out, EPS, ACTIVE_AMPLITUDE)
    amps = amp.reshape(1, -1)
    _update_batch(
        s, amps, phase.reshape(1, -1), DEFAULT_ETA, out, np.empty((1, DIM)), EPS, ACTIVE_AMPLITUDE
    )
    _normalize(s, out, EPS)
    _entropy(s, EPS)
    _entropy_checked(s, EPS)
    _cosine_pair(s, s, EPS)
    _similarity_rows(s, s.reshape(1, DIM), np.empty(1), EPS)
    _similarity_rows_serial(s, s.reshape(1, DIM), np.empty(1), EPS)
