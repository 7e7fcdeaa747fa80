"""Slow, obviously-correct sedenion references (no sign table).

The product is the Cayley–Dickson recursion itself, on Python lists of floats:
(a, b)(c, d) = (ac − d̄b, da + bc̄), conj(a, b) = (ā, −b), down to the reals.
"""

from __future__ import annotations

import math

import numpy as np


def cd_conj(x: list[float]) -> list[float]:
    if len(x) == 1:
        return list(x)
    half = len(x) // 2
    return cd_conj(x[:half]) + [-v for v in x[half:]]


def cd_mul(x: list[float], y: list[float]) -> list[float]:
    """Cayley–Dickson product of two lists of length 2^k."""
    if len(x) == 1:
        return [x[0] * y[0]]
    half = len(x) // 2
    a, b = x[:half], x[half:]
    c, d = y[:half], y[half:]
    ac = cd_mul(a, c)
    db = cd_mul(cd_conj(d), b)
    da = cd_mul(d, a)
    bc = cd_mul(b, cd_conj(c))
    return [p - q for p, q in zip(ac, db, strict=True)] + [
        p + q for p, q in zip(da, bc, strict=True)
    ]


def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array(cd_mul([float(v) for v in a], [float(v) for v in b]))


def mul_batch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([mul(x, y) for x, y in zip(a, b, strict=True)]).reshape(-1, 16)


def conj(a: np.ndarray) -> np.ndarray:
    return np.array(cd_conj([float(v) for v in a]))


def norm(a: np.ndarray) -> float:
    return math.sqrt(sum(float(v) * float(v) for v in a))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = norm(a), norm(b)
    if na < 1e-10 or nb < 1e-10:
        return 0.0
    return sum(float(x) * float(y) for x, y in zip(a, b, strict=True)) / (na * nb)
