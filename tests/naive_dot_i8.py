"""Slow, obviously-correct reference for sentient_kernels.dot_i8: Python integer sums."""

from __future__ import annotations

import numpy as np

__all__ = ["dots", "split"]


def dots(codes: np.ndarray, p: np.ndarray) -> list[int]:
    """``Σ_j codes[i, j]·p[j]`` for every row, in unbounded Python ints."""
    pv = [int(v) for v in p]
    return [sum(int(c) * w for c, w in zip(row, pv, strict=True)) for row in codes]


def split(v: int) -> tuple[int, int]:
    """``(h, l)`` with ``v = 256·h + l`` and ``l`` in [-128, 127]."""
    low = v % 256
    if low >= 128:
        low -= 256
    return (v - low) // 256, low
