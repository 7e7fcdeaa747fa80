"""The parts every exact top-k cosine scan shares: dots, norms, the final score, the heap.

:mod:`sentient_kernels.holographic` (and the scans built on it: BM25's hybrid,
the scored overlay, int8 codes) rank rows with these, so a row gets the same
score, bit for bit, whichever scan reads it. Estimates are float32 (a screen
only); every score that can reach a result is a float64 dot finished by
:func:`_exact_cosine`, whose multiplications are strict IEEE so that no caller's
fast-math context can reassociate them differently.
"""

from __future__ import annotations

import math

import numpy as np

from sentient_kernels.config import jit

__all__: list[str] = []


@jit()
def _dot_f64(row, q64):
    """Dot of a float32 row with a float64 vector, accumulated in float64."""
    acc = 0.0
    for j in range(row.shape[0]):
        acc += np.float64(row[j]) * q64[j]
    return acc


@jit()
def _sumsq_f64(row):
    """Squared norm of a float32 row, accumulated in float64."""
    acc = 0.0
    for j in range(row.shape[0]):
        x = np.float64(row[j])
        acc += x * x
    return acc


@jit()
def _dot_f32(row, q):
    """Dot of two float32 vectors in float32 (a screening estimate only)."""
    acc = np.float32(0.0)
    for j in range(row.shape[0]):
        acc += row[j] * q[j]
    return acc


@jit()
def _sumsq_f32(row):
    """Squared norm in float32 (screening, and a free NaN/inf detector)."""
    acc = np.float32(0.0)
    for j in range(row.shape[0]):
        acc += row[j] * row[j]
    return acc


@jit()
def _worse(s1, i1, s2, i2):
    """True if candidate (s1, i1) ranks below (s2, i2): lower score, then higher index."""
    return s1 < s2 or (s1 == s2 and i1 > i2)


@jit()
def _heap_push(hs, hi, n, s, i):
    """Add (s, i) to a min-heap of size n (root = worst candidate)."""
    c = n
    while c > 0:
        p = (c - 1) >> 1
        if _worse(s, i, hs[p], hi[p]):
            hs[c] = hs[p]
            hi[c] = hi[p]
            c = p
        else:
            break
    hs[c] = s
    hi[c] = i


@jit()
def _heap_replace_root(hs, hi, n, s, i):
    """Replace the worst candidate of a full heap of size n by (s, i)."""
    c = 0
    while True:
        left = 2 * c + 1
        if left >= n:
            break
        w = left
        right = left + 1
        if right < n and _worse(hs[right], hi[right], hs[left], hi[left]):
            w = right
        if _worse(hs[w], hi[w], s, i):
            hs[c] = hs[w]
            hi[c] = hi[w]
            c = w
        else:
            break
    hs[c] = s
    hi[c] = i


@jit(fastmath=False)
def _exact_cosine(dot, nn64, normalized, inv_qnorm):
    """The score of a row from its float64 dot with the query: ``dot / (|row| |q|)``.

    ``normalized`` trusts ``|row| = 1`` (``nn64`` unused); else ``nn64`` is the
    row's float64 squared norm (a zero row scores 0). Strict IEEE (no
    fast-math): inlined into any scan it rounds the same way, so every scan
    gives a row the same bits.
    """
    if normalized:
        return dot * inv_qnorm
    scale = 1.0 / math.sqrt(nn64) if nn64 > 0.0 else 0.0
    return dot * scale * inv_qnorm


@jit()
def _warm_parts():
    """Compile the parts once (each scan inlines its own copy; this is for the cache)."""
    row = np.ones(4, dtype=np.float32)
    q64 = np.ones(4)
    hs = np.empty(2)
    hi = np.empty(2, dtype=np.int64)
    _heap_push(hs, hi, 0, 1.0, 0)
    _heap_push(hs, hi, 1, 0.5, 1)
    _heap_replace_root(hs, hi, 2, 0.7, 2)
    s = _dot_f32(row, row) + _sumsq_f32(row)
    return s + _exact_cosine(_dot_f64(row, q64), _sumsq_f64(row), False, 0.5)


def _warmup() -> None:
    _warm_parts()
