"""Plain-Python reference for :mod:`sentient_kernels.credit` (one event at a time, SPEC §5)."""

from __future__ import annotations

import numpy as np


def evidence(s: float) -> float:
    if s < 0.20:
        return 0.0
    x = (s - 0.20) / 0.80
    return x * x


def apply_events(credit, streak, last_dir, strength, memory_index, direction, surprise):
    """Apply events in order; returns (credit, streak, last_dir, strength, deltas) as lists.

    Sub-threshold events (e = 0) only decay the credit; the streak and its
    direction change only on signals (e > 0); the gate fires on signals only and
    does not reset the streak.
    """
    credit = [float(x) for x in credit]
    streak = [int(x) for x in streak]
    last_dir = [int(x) for x in last_dir]
    strength = [float(x) for x in strength]
    deltas = []
    for m, d, s in zip(
        np.asarray(memory_index).tolist(),
        np.asarray(direction).tolist(),
        np.asarray(surprise).tolist(),
        strict=True,
    ):
        e = evidence(s)
        credit[m] = 0.85 * credit[m] + d * e
        change = 0.0
        if e > 0.0:
            if d == last_dir[m]:
                streak[m] += 1
            else:
                streak[m] = 1
                last_dir[m] = d
            if abs(credit[m]) >= 0.75 and streak[m] >= 2:
                sign = 1.0 if credit[m] > 0 else -1.0
                step = min(0.08, 0.02 + 0.06 * min(abs(credit[m]) - 0.75, 1.0))
                old = strength[m]
                strength[m] = min(1.5, max(0.05, old + sign * step))
                change = strength[m] - old
                credit[m] = 0.35 * credit[m]
        deltas.append(change)
    return credit, streak, last_dir, strength, deltas
