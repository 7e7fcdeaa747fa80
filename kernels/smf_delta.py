"""The SMF's target Δ from an oscillator state (SPEC §1), and the exact vector math it uses.

Kernels only (njit-callable, no checks): :mod:`sentient_kernels.smf` wraps them
(:func:`sentient_kernels.smf.delta`, :func:`sentient_kernels.smf.delta_trig`, the updates) and
:mod:`sentient_kernels.tick` calls them inside the fused observer tick.
"""

from __future__ import annotations

import numpy as np

from sentient_kernels.config import jit

__all__: list[str] = []


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
def _delta_phase_once(amp, phase, out, eps, active):
    n = amp.shape[0]
    _delta_phase(amp, phase, out, np.empty((3, n)), np.empty(n, np.int64), eps, active)


@jit()
def _delta_trig_once(amp, cos_phase, sin_phase, out, eps, active):
    n = amp.shape[0]
    work = np.empty((3, n))
    _delta_trig(amp, cos_phase, sin_phase, out, work, np.empty(n, np.int64), eps, active)
