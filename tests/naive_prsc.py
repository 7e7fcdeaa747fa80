"""Slow, obviously-correct references for :mod:`sentient_kernels.prsc` (pairwise O(N²) coupling)."""

from __future__ import annotations

import cmath
import math

import numpy as np

TWO_PI = 2.0 * math.pi


def wrap(p: float) -> float:
    """Python's modulo, with the p = -tiny → 2π rounding case sent to 0."""
    p = p % TWO_PI
    return 0.0 if p >= TWO_PI else p


def run(phase, amplitude, frequency, steps, dt=1.0 / 60.0, coupling=0.3, damping=0.02):
    """Return new (phase, amplitude) arrays after ``steps`` ticks, pairwise sine coupling."""
    phase = np.array(phase, dtype=np.float64)
    amplitude = np.array(amplitude, dtype=np.float64)
    frequency = np.asarray(frequency, dtype=np.float64)
    n = phase.shape[0]
    for _ in range(steps):
        w = np.minimum(1.0, amplitude + 0.1)
        # sin_diff[i, j] = sin(φ_j − φ_i), computed from the old phases only.
        sin_diff = np.sin(phase[None, :] - phase[:, None])
        pull = (sin_diff * w[None, :]).sum(axis=1)
        new_phase = phase + 2.0 * math.pi * frequency * dt + dt * (coupling / n) * pull
        phase = np.array([wrap(p) for p in new_phase])
        amplitude = amplitude * (1.0 - damping * dt)
        amplitude[amplitude < 1e-10] = 0.0
    return phase, amplitude


def coherence(phase, amplitude) -> float:
    total = 0.0
    acc = 0j
    for p, a in zip(phase, amplitude, strict=True):
        w = max(0.1, float(a))
        acc += w * cmath.exp(1j * float(p))
        total += w
    return abs(acc) / total if total > 0 else 0.0


def excite(phase, amplitude, indices, amount, target_phase=None, pull=0.0):
    """Return new (phase, amplitude) lists after exciting ``indices`` in order."""
    phase = [float(p) for p in phase]
    amplitude = [float(a) for a in amplitude]
    amounts = np.broadcast_to(np.asarray(amount, dtype=np.float64), (len(indices),))
    for k, i in enumerate(indices):
        amplitude[i] = min(1.0, amplitude[i] + float(amounts[k]))
        if target_phase is not None:
            # Shortest signed arc: try nearby representatives, keep the smallest.
            diff = float(target_phase[k]) - phase[i]
            # (An exact tie, |arc| = π, goes to −π.)
            arc = min((diff + TWO_PI * m for m in range(-3, 4)), key=lambda d: (abs(d), d))
            phase[i] = wrap(phase[i] + pull * arc)
    return phase, amplitude


def prime_state(phase, amplitude):
    alpha = np.array([a * cmath.exp(1j * p) for p, a in zip(phase, amplitude, strict=True)])
    norm = math.sqrt(sum(abs(z) ** 2 for z in alpha))
    if norm <= 1e-12:
        return np.zeros(len(alpha), dtype=np.complex128)
    return alpha / norm


def is_prime(k: int) -> bool:
    return k >= 2 and all(k % d for d in range(2, math.isqrt(k) + 1))


def first_primes(n: int) -> list[int]:
    out, k = [], 2
    while len(out) < n:
        if is_prime(k):
            out.append(k)
        k += 1
    return out
