"""Interference picture of a prime state: ``|Σ_p α_p exp(i k_p·r)|²`` on a grid.

For display (the panel, ``cli.py``), never for ranking; it was part of
:mod:`sentient_kernels.holographic` and is a picture of the same prime state.
"""

from __future__ import annotations

import cmath
import math

import numpy as np

from sentient_kernels.checks import check_array, check_int
from sentient_kernels.config import jit

__all__ = ["interference_grid"]


@jit()
def _interference_grid(amplitudes, primes, size, out):
    golden = math.pi * (3.0 - math.sqrt(5.0))
    n = primes.shape[0]
    kx = np.empty(n)
    ky = np.empty(n)
    for p in range(n):
        wavelength = 10.0 * (1.0 + math.log2(primes[p]))
        kmag = 2.0 * math.pi / wavelength
        theta = p * golden
        kx[p] = kmag * math.cos(theta)
        ky[p] = kmag * math.sin(theta)
    for y in range(size):
        for x in range(size):
            h = 0j
            for p in range(n):
                h += amplitudes[p] * cmath.exp(1j * (kx[p] * x + ky[p] * y))
            out[y, x] = h.real * h.real + h.imag * h.imag


def interference_grid(prime_state: np.ndarray, primes: np.ndarray, size: int = 32) -> np.ndarray:
    """Interference intensity picture of a prime state (for display, never ranking).

    ``H(x, y) = Σ_p α_p exp(i k_p·r)`` with ``r = (x, y)``, ``x, y = 0..size-1``,
    ``|k_p| = 2π/λ_p``, ``λ_p = 10 (1 + log2 p)`` and direction angle
    ``θ_p = p_index · golden_angle`` (``p_index`` = 0-based position in ``primes``,
    golden angle = π(3 − √5)).

    Parameters
    ----------
    prime_state : (P,) complex128
        Amplitudes α_p.
    primes : (P,) int64
        The primes (each >= 2).
    size : int
        Grid side, default 32.

    Returns
    -------
    (size, size) float64
        ``out[y, x] = |H(x, y)|²`` (row = y, as in an image).
    """
    prime_state = check_array("prime_state", prime_state, dtype=np.complex128, ndim=1)
    primes = check_array("primes", primes, dtype=np.int64, shape=(prime_state.shape[0],))
    size = check_int("size", size, lo=1)
    if primes.size and primes.min() < 2:
        raise ValueError(f"primes must all be >= 2, got {int(primes.min())}")
    out = np.empty((size, size), dtype=np.float64)
    _interference_grid(prime_state, primes, size, out)
    return out


def _warmup() -> None:
    interference_grid(np.ones(2, dtype=np.complex128), np.array([2, 3], dtype=np.int64))
