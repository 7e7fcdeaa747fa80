"""Slow, obviously-correct references for sentient_kernels.scorer (plain Python floats)."""

from __future__ import annotations

import math

import numpy as np


def score(features, baseline, delta, veto) -> np.ndarray:
    out = []
    for c, row in enumerate(features.tolist()):
        if veto[c]:
            out.append(-math.inf)
            continue
        z = 0.0
        for k, f in enumerate(row):
            z += (float(baseline[k]) + float(delta[k])) * f
        out.append(z)
    return np.array(out)


def rank(features, baseline, delta, veto, k) -> np.ndarray:
    scores = score(features, baseline, delta, veto)
    alive = [c for c in range(len(scores)) if not veto[c]]
    alive.sort(key=lambda c: (-scores[c], c))
    return np.array(alive[:k], dtype=np.int64)


def sigmoid_and_loss(z: float, y: float) -> tuple[float, float]:
    """p = σ(z) and ℓ = softplus(z) − y z, both through e = exp(−|z|)."""
    e = math.exp(-abs(z))
    p = 1.0 / (1.0 + e) if z >= 0.0 else e / (1.0 + e)
    t = -z if y == 1.0 else z
    return p, max(t, 0.0) + math.log1p(e)


def sgd_batch(
    delta,
    baseline,
    features,
    labels,
    age_days,
    learnable,
    delta_lo,
    delta_hi,
    lr=0.01,
    grad_clip=1.0,
    half_life_days=21.0,
) -> tuple[np.ndarray, float]:
    """One sample at a time, in order. Returns (new delta, mean weighted loss)."""
    d = [float(v) for v in delta]
    total = 0.0
    rows = features.tolist()
    for b, row in enumerate(rows):
        y = float(labels[b])
        z = 0.0
        for k, f in enumerate(row):
            z += (float(baseline[k]) + d[k]) * f
        omega = 0.5 ** (float(age_days[b]) / half_life_days)
        p, loss = sigmoid_and_loss(z, y)
        total += omega * loss
        for k, f in enumerate(row):
            if learnable[k]:
                g = omega * (p - y) * f
                g = min(max(g, -grad_clip), grad_clip)
                d[k] = min(max(d[k] - lr * g, float(delta_lo[k])), float(delta_hi[k]))
    return np.array(d), total / len(rows)


def logistic_loss(features, labels, baseline, delta, age_days, half_life_days=21.0) -> float:
    total = 0.0
    rows = features.tolist()
    for b, row in enumerate(rows):
        z = 0.0
        for k, f in enumerate(row):
            z += (float(baseline[k]) + float(delta[k])) * f
        omega = 0.5 ** (float(age_days[b]) / half_life_days)
        total += omega * sigmoid_and_loss(z, float(labels[b]))[1]
    return total / len(rows)
