"""Slow, obviously-correct references for sentient_kernels.quantized.

Quantisation is written out element by element in float64 (``round`` is
half-to-even, as in the kernel), and the exact quantisation error uses
``math.fsum``. The exact top-k answer is :func:`tests.naive_holographic.topk_cosine`:
the int8 path must return the float32 answer, so its reference is the float32
reference.
"""

from __future__ import annotations

import math

import numpy as np

from tests.naive_holographic import topk_cosine

__all__ = ["error_norm", "quantise", "topk_cosine"]


def quantise(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(int8 codes, float32 scales, float64 norms): ``scale = max|x| / 127``, ``c = round(x / scale)``."""
    m, d = codes.shape
    out = np.zeros((m, d), dtype=np.int8)
    scales = np.zeros(m, dtype=np.float32)
    norms = np.zeros(m)
    for i in range(m):
        row = [float(v) for v in codes[i]]
        norms[i] = math.sqrt(math.fsum(v * v for v in row))
        amax = max(abs(v) for v in row)
        s = float(np.float32(amax / 127.0))
        scales[i] = s
        if s == 0.0:
            continue
        for j, v in enumerate(row):
            out[i, j] = int(min(127, max(-127, round(v / s))))
    return out, scales, norms


def error_norm(codes: np.ndarray, q_codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Exact ``‖x − scale · c‖`` per row (fsum of exact float64 products)."""
    out = np.empty(codes.shape[0])
    for i in range(codes.shape[0]):
        s = float(scales[i])
        diffs = [float(x) - int(c) * s for x, c in zip(codes[i], q_codes[i], strict=True)]
        out[i] = math.sqrt(math.fsum(e * e for e in diffs))
    return out
