"""Slow, obviously-correct Sedenion Memory Field references (SPEC §1), pure Python."""

from __future__ import annotations

import cmath
import math

import numpy as np


def normalize(s) -> np.ndarray:
    n = math.sqrt(sum(float(v) ** 2 for v in s))
    return np.array([float(v) / max(n, 1e-10) for v in s])


def entropy(s) -> float:
    mass = sum(abs(float(v)) for v in s)
    if mass < 1e-10:
        return 0.0
    h = 0.0
    for v in s:
        p = abs(float(v)) / mass
        if p > 1e-10:
            h -= p * math.log(p)
    return h


def similarity(a, b) -> float:
    na = math.sqrt(sum(float(v) ** 2 for v in a))
    nb = math.sqrt(sum(float(v) ** 2 for v in b))
    if na < 1e-10 or nb < 1e-10:
        return 0.0
    return sum(float(x) * float(y) for x, y in zip(a, b, strict=True)) / (na * nb)


def stats(amplitude, phase) -> dict:
    """The oscillator statistics Δ is built from, straight from their definitions."""
    amps = [float(a) for a in amplitude]
    n = len(amps)
    mean = sum(amps) / n
    variance = sum((a - mean) ** 2 for a in amps) / n
    total = sum(amps)
    active = [k for k, a in enumerate(amps) if a > 0.1]
    n_active = len(active)
    if n_active:
        order = abs(sum(cmath.exp(1j * float(phase[k])) for k in active)) / n_active
    else:
        order = 0.0
    # Prime state α_p = A_p e^{iφ_p}, L2-normalised; entropy of |α_p|² in bits.
    alpha = [a * cmath.exp(1j * float(p)) for a, p in zip(amps, phase, strict=True)]
    size = math.sqrt(sum(abs(z) ** 2 for z in alpha))
    entropy_bits = 0.0
    if size >= 1e-10:
        for z in alpha:
            p = abs(z / size) ** 2
            if p > 0.0:
                entropy_bits -= p * math.log2(p)
    return {
        "n": n,
        "variance": variance,
        "total": total,
        "n_active": n_active,
        "order": order,
        "entropy_bits": entropy_bits,
    }


def delta(amplitude, phase) -> np.ndarray:
    """Δ (16,) of SPEC §1, one component per line."""
    if len(amplitude) == 0:
        out = [0.0] * 16
        out[0] = 0.1
        return np.array(out)
    st = stats(amplitude, phase)
    n, var, total = st["n"], st["variance"], st["total"]
    n_a, r, h = st["n_active"], st["order"], st["entropy_bits"]
    d = [0.0] * 16
    d[0] = 0.3 * r
    d[1] = max(0.0, 0.2 - 0.5 * var)
    d[2] = 0.2 * var
    d[3] = min(0.3, 0.3 * n_a / n)
    d[4] = 0.1 * var
    d[5] = min(0.3, 0.05 * total)
    d[6] = 0.15 * (r + d[3])
    d[7] = max(0.0, 0.3 - 0.1 * h)
    d[8] = 0.2 if r > 0.9 else 0.0
    d[9] = 0.05
    d[10] = 0.2 if (r > 0.7 and var < 0.1) else 0.0
    d[11] = 0.1 * r
    d[12] = 0.2 if total > 0.5 * n else 0.05
    d[13] = 0.05
    d[14] = min(0.2, 0.2 * n_a / 16)
    d[15] = 0.2 * (d[0] + d[1] + d[7])
    return np.array(d)


def update(s, amplitude, phase, eta: float = 0.1) -> np.ndarray:
    d = delta(amplitude, phase)
    return normalize([(1.0 - eta) * float(x) + eta * float(y) for x, y in zip(s, d, strict=True)])


def update_batch(s, amplitudes, phases, eta: float = 0.1) -> np.ndarray:
    """Trajectory (B, 16): the field after each of the B sequential updates."""
    traj = []
    cur = np.array(s, dtype=float)
    for amp, ph in zip(amplitudes, phases, strict=True):
        cur = update(cur, amp, ph, eta)
        traj.append(cur)
    return np.array(traj).reshape(-1, 16)
