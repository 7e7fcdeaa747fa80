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

from kernels import checks
from kernels.checks import check_array, check_scalar
from kernels.config import jit

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
# Vectorisable elementary functions.
#
# Numba has no vector math library here, so np.cos/np.sin/np.log in a loop are
# scalar libm calls (~12 ns per sin+cos pair, ~3.5 ns per log). These strict
# (no fast-math) loops compile to AVX code instead: fdlibm's reduction and
# polynomials, accurate to 1 ulp, ~1.6 ns per sin+cos pair and ~1.5 ns per log.


@jit(fastmath=False)
def _sincos(x, n, cos_out, sin_out):
    """cos and sin of x[:n] (fdlibm kernels; libm for |x| > 1e5)."""
    n_big = 0
    for k in range(n):
        n_big += abs(x[k]) > 1e5
    if n_big > 0:
        # The two-step Cody–Waite reduction below is exact only for moderate |x|.
        for k in range(n):
            cos_out[k] = np.cos(x[k])
            sin_out[k] = np.sin(x[k])
        return
    for k in range(n):
        v = x[k]
        q = np.rint(v * 6.36619772367581382433e-01)  # 2/π
        # v − q·π/2 with π/2 split in three parts (fdlibm pio2_1, pio2_2, pio2_2t).
        t = v - q * 1.57079632673412561417e00
        w = q * 6.07710050650619224932e-11
        r = t - w
        w = q * 2.02226624879595063154e-21 - ((t - r) - w)
        y = r - w
        tail = (r - y) - w
        z = y * y
        sin_poly = z * (
            8.33333333332248946124e-03
            + z
            * (
                -1.98412698298579493134e-04
                + z
                * (
                    2.75573137070700676789e-06
                    + z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)
                )
            )
        )
        sin_y = y + (y * z) * (-1.66666666666666324348e-01 + sin_poly) + tail * (1.0 - 0.5 * z)
        cos_poly = z * (
            4.16666666666666019037e-02
            + z
            * (
                -1.38888888888741095749e-03
                + z
                * (
                    2.48015872894767294178e-05
                    + z
                    * (
                        -2.75573143513906633035e-07
                        + z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)
                    )
                )
            )
        )
        half_z = 0.5 * z
        one_minus = 1.0 - half_z
        cos_y = one_minus + (((1.0 - one_minus) - half_z) + (z * cos_poly - y * tail))
        quadrant = np.int64(q) & 3
        odd = (quadrant & 1) == 1
        cos_mag = sin_y if odd else cos_y
        sin_mag = cos_y if odd else sin_y
        cos_out[k] = -cos_mag if ((quadrant + 1) & 2) != 0 else cos_mag
        sin_out[k] = -sin_mag if (quadrant & 2) != 0 else sin_mag


@jit(fastmath=False)
def _log_positive(x, n, int_work, exponent_work, out):
    """Natural log of x[:n], which must be positive normal floats (fdlibm __ieee754_log)."""
    bits = x.view(np.int64)
    for k in range(n):
        # Split x = m · 2^e with m in [1, 2), reading the IEEE fields directly.
        int_work[k] = (bits[k] & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000
        exponent_work[k] = np.float64((bits[k] >> 52) - 1023)
    mantissa = int_work.view(np.float64)
    for k in range(n):
        out[k] = mantissa[k]
    for k in range(n):
        m = out[k]
        big = m > 1.4142135623730951
        m = 0.5 * m if big else m
        e = exponent_work[k] + 1.0 if big else exponent_work[k]
        f = m - 1.0
        # np.divide: plain "/" adds a ZeroDivisionError branch that blocks vectorisation.
        s = np.divide(f, 2.0 + f)
        z = s * s
        w = z * z
        t1 = w * (
            3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01)
        )
        t2 = z * (
            6.666666666666735130e-01
            + w
            * (
                2.857142874366239149e-01
                + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)
            )
        )
        r = t2 + t1
        half_f2 = 0.5 * f * f
        # ln 2 split in hi/lo parts (fdlibm ln2_hi, ln2_lo).
        out[k] = e * 6.93147180369123816490e-01 - (
            (half_f2 - (s * (half_f2 + r) + e * 1.90821492927058770002e-10)) - f
        )


# ---------------------------------------------------------------------------
# Δ from the oscillator bank.


@jit()
def _fill_delta(out, n, variance, total, n_active, order, entropy_bits):
    """Write Δ (SPEC §1) from the oscillator statistics into ``out`` (16,)."""
    if n == 0:
        out[:] = 0.0
        out[0] = 0.1
        return
    d0 = 0.3 * order
    d1 = max(0.0, 0.2 - 0.5 * variance)
    d3 = min(0.3, 0.3 * n_active / n)
    d7 = max(0.0, 0.3 - 0.1 * entropy_bits)
    out[0] = d0
    out[1] = d1
    out[2] = 0.2 * variance
    out[3] = d3
    out[4] = 0.1 * variance
    out[5] = min(0.3, 0.05 * total)
    out[6] = 0.15 * (order + d3)
    out[7] = d7
    out[8] = 0.2 if order > 0.9 else 0.0
    out[9] = 0.05
    out[10] = 0.2 if (order > 0.7 and variance < 0.1) else 0.0
    out[11] = 0.1 * order
    out[12] = 0.2 if total > 0.5 * n else 0.05
    out[13] = 0.05
    out[14] = min(0.2, 0.2 * n_active / 16.0)
    out[15] = 0.2 * (d0 + d1 + d7)


@jit()
def _variance(amp, total):
    n = amp.shape[0]
    mean = total / n
    acc = 0.0
    for k in range(n):
        dev = amp[k] - mean
        acc += dev * dev
    return acc / n


@jit()
def _prime_entropy_bits(amp, eps, work, int_work):
    """log2 entropy of p_k = A_k² / ΣA²; 0 if √ΣA² < eps. ``work`` is (3, N) scratch."""
    n = amp.shape[0]
    sq = 0.0
    for k in range(n):
        sq += amp[k] * amp[k]
    if np.sqrt(sq) < eps:
        return 0.0
    inv_sq = 1.0 / sq
    probs = work[0]
    for k in range(n):
        p = amp[k] * amp[k] * inv_sq
        # p = 0 (and p < 1e-300, whose p·ln p is below 1e-297) contributes 0 = 1·ln 1.
        probs[k] = p if p >= 1e-300 else 1.0
    logs = work[2]
    _log_positive(probs, n, int_work, work[1], logs)
    h = 0.0
    for k in range(n):
        h -= probs[k] * logs[k]
    return h * 1.4426950408889634  # 1 / ln 2: nats to bits


@jit()
def _delta_phase(amp, phase, out, work, int_work, eps, active):
    """Δ from amplitudes and phases; cos/sin only for active oscillators.

    ``work`` is float64 (3, N) and ``int_work`` int64 (N,) scratch.
    """
    n = amp.shape[0]
    if n == 0:
        _fill_delta(out, 0, 0.0, 0.0, 0, 0.0, 0.0)
        return
    active_phase = work[0]
    total = 0.0
    n_active = 0
    for k in range(n):
        a = amp[k]
        total += a
        # Branch-free compaction of the active phases.
        active_phase[n_active] = phase[k]
        n_active += a > active
    order = 0.0
    if n_active > 0:
        cos_phase = work[1]
        sin_phase = work[2]
        _sincos(active_phase, n_active, cos_phase, sin_phase)
        re = 0.0
        im = 0.0
        for k in range(n_active):
            re += cos_phase[k]
            im += sin_phase[k]
        order = np.sqrt(re * re + im * im) / n_active
    variance = _variance(amp, total)
    entropy_bits = _prime_entropy_bits(amp, eps, work, int_work)
    _fill_delta(out, n, variance, total, n_active, order, entropy_bits)


@jit()
def _delta_trig(amp, cos_phase, sin_phase, out, work, int_work, eps, active):
    """Δ from amplitudes and precomputed cos/sin of the phases (scratch as above)."""
    n = amp.shape[0]
    if n == 0:
        _fill_delta(out, 0, 0.0, 0.0, 0, 0.0, 0.0)
        return
    total = 0.0
    n_active = 0
    re = 0.0
    im = 0.0
    for k in range(n):
        a = amp[k]
        total += a
        on = a > active
        n_active += on
        re += cos_phase[k] if on else 0.0
        im += sin_phase[k] if on else 0.0
    order = np.sqrt(re * re + im * im) / n_active if n_active > 0 else 0.0
    variance = _variance(amp, total)
    entropy_bits = _prime_entropy_bits(amp, eps, work, int_work)
    _fill_delta(out, n, variance, total, n_active, order, entropy_bits)


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
def _delta_phase_once(amp, phase, out, eps, active):
    n = amp.shape[0]
    _delta_phase(amp, phase, out, np.empty((3, n)), np.empty(n, np.int64), eps, active)


@jit()
def _delta_trig_once(amp, cos_phase, sin_phase, out, eps, active):
    n = amp.shape[0]
    work = np.empty((3, n))
    _delta_trig(amp, cos_phase, sin_phase, out, work, np.empty(n, np.int64), eps, active)


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
# native float64, unit stride): such arrays go straight to a kernel that checks
# shapes and finiteness itself and reports a status. Anything else, or a bad
# status, takes the full checks of kernels.checks, which raise naming the
# argument. The fast test is a sufficient condition only: everything the
# full checks accept still works, just slower.

_NDARRAY = np.ndarray
_F64 = np.dtype(np.float64)
_VECTOR_STRIDES = (8,)
_ROW_STRIDES = (8 * DIM, 8)


def _is_vector(x: object) -> bool:
    return x.__class__ is _NDARRAY and x.dtype == _F64 and x.strides == _VECTOR_STRIDES


def _check_state(name: str, s: object) -> np.ndarray:
    return check_array(name, s, dtype=np.float64, shape=(DIM,))


def _check_oscillators(amplitude: object, phase: object, phase_name: str = "phase"):
    amplitude = check_array("amplitude", amplitude, dtype=np.float64, ndim=1)
    phase = check_array(phase_name, phase, dtype=np.float64, shape=amplitude.shape)
    return amplitude, phase


def _check_eta(eta: object) -> float:
    return check_scalar("eta", eta, lo=0.0, hi=1.0)


def _check_out(out: object) -> np.ndarray:
    return check_array("out", out, dtype=np.float64, shape=(DIM,), finite=False)


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
    if s.__class__ is _NDARRAY and s.dtype == _F64 and s.strides == _VECTOR_STRIDES:
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
        float64 (M,) destination.

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
        and s.dtype == _F64
        and others.dtype == _F64
        and s.strides == _VECTOR_STRIDES
        and others.strides == _ROW_STRIDES
        and others.shape[0] < _PARALLEL_MIN_ROWS
        and (out is None or _is_vector(out))
    ):
        fast_out = np.empty(others.shape[0]) if out is None else out
        if _similarity_rows_serial(s, others, fast_out, EPS) == 0:
            return fast_out
    s = _check_state("s", s)
    # Finiteness of ``others`` is checked by the kernel (NaN results, see
    # _similarity_rows), or by a sweep when |s| < 1e-10 makes every result 0.
    others = check_array("others", others, dtype=np.float64, shape=(None, DIM), finite=False)
    m = others.shape[0]
    if out is None:
        out = np.empty(m)
    else:
        out = check_array("out", out, dtype=np.float64, shape=(m,), finite=False)
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
        and a.dtype == _F64
        and b.dtype == _F64
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
        float64 (16,) destination; may be ``s`` itself (in-place update).

    Returns
    -------
    numpy.ndarray
        ``out`` (a new array if not given).
    """
    if (
        s.__class__ is _NDARRAY
        and amplitude.__class__ is _NDARRAY
        and phase.__class__ is _NDARRAY
        and s.dtype == _F64
        and amplitude.dtype == _F64
        and phase.dtype == _F64
        and s.strides == _VECTOR_STRIDES
        and amplitude.strides == _VECTOR_STRIDES
        and phase.strides == _VECTOR_STRIDES
        and eta.__class__ is float
        and 0.0 <= eta <= 1.0
        and (out is None or _is_vector(out))
    ):
        fast_out = np.empty(DIM) if out is None else out
        if not _update_phase(s, amplitude, phase, eta, fast_out, EPS, ACTIVE_AMPLITUDE):
            return fast_out
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
