"""Slow, obviously-correct references for sentient_kernels.holographic.

Dots are exact: a float32 × float32 product is exact in float64 and
``math.fsum`` rounds the sum once, so every score is the correctly rounded
cosine of the stored float32 values (up to the final division).
"""

from __future__ import annotations

import cmath
import math

import numpy as np


def cosine_scores(codes: np.ndarray, query: np.ndarray, normalized: bool = False) -> np.ndarray:
    """Float64 score of every row: dot / (|row| |query|), 0 for a zero row."""
    c = codes.astype(np.float64)
    q = query.astype(np.float64)
    qnorm = math.sqrt(math.fsum(q * q))
    out = np.empty(c.shape[0])
    for i in range(c.shape[0]):
        dot = math.fsum(c[i] * q)
        if normalized:
            out[i] = dot / qnorm
        else:
            rnorm = math.sqrt(math.fsum(c[i] * c[i]))
            out[i] = 0.0 if rnorm == 0.0 else dot / (rnorm * qnorm)
    return out


def topk_cosine(
    codes: np.ndarray,
    query: np.ndarray,
    k: int,
    normalized: bool = False,
    valid: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Scores for all rows, then ``np.lexsort((idx, -score))``, first k."""
    scores = cosine_scores(codes, query, normalized)
    idx = np.arange(codes.shape[0])
    if valid is not None:
        keep = np.asarray(valid).astype(bool)
        idx, scores = idx[keep], scores[keep]
    order = np.lexsort((idx, -scores))[:k]
    return idx[order].astype(np.int64), scores[order]


def row_norms(codes: np.ndarray) -> np.ndarray:
    c = codes.astype(np.float64)
    return np.array([math.sqrt(math.fsum(row * row)) for row in c])


def interference_grid(prime_state: np.ndarray, primes: np.ndarray, size: int = 32) -> np.ndarray:
    """out[y, x] = |Σ_p α_p exp(i k_p·(x, y))|², λ_p = 10(1 + log2 p), θ_p = index · golden angle."""
    golden = math.pi * (3.0 - math.sqrt(5.0))
    out = np.zeros((size, size))
    for y in range(size):
        for x in range(size):
            h = 0j
            for index, (alpha, p) in enumerate(zip(prime_state, primes, strict=True)):
                wavelength = 10.0 * (1.0 + math.log2(int(p)))
                kmag = 2.0 * math.pi / wavelength
                theta = index * golden
                h += complex(alpha) * cmath.exp(
                    1j * (kmag * math.cos(theta) * x + kmag * math.sin(theta) * y)
                )
            out[y, x] = abs(h) ** 2
    return out
