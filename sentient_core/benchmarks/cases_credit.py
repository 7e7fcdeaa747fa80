"""Benchmark cases for :mod:`sentient_kernels.credit` (surprise events → memory strength).

``credit.apply_events``: 1M events over 10k memories in one call against the
same rules as a plain Python loop (tests/naive_credit.py's algorithm), run on
fewer events; the ratio is per event.
"""

from __future__ import annotations

import numpy as np

from sentient_core.benchmarks.cases import Case
from sentient_kernels import credit

# The kernels this module's cases time (``bench --only`` builds no other module's fixtures).
KERNELS = ("credit.apply_events",)


def python_loop(state: credit.CreditState, memory_index, direction, surprise) -> list[float]:
    """The credit rules one event at a time in plain Python (lists in, lists out)."""
    cr, streak, last_dir, strength = state
    deltas = []
    for m, d, s in zip(memory_index, direction, surprise, strict=True):
        e = 0.0 if s < 0.20 else ((s - 0.20) / 0.80) * ((s - 0.20) / 0.80)
        c = 0.85 * cr[m] + d * e
        change = 0.0
        if e > 0.0:
            if d == last_dir[m]:
                streak[m] += 1
            else:
                streak[m] = 1
                last_dir[m] = d
            if abs(c) >= 0.75 and streak[m] >= 2:
                step = min(0.08, 0.02 + 0.06 * min(abs(c) - 0.75, 1.0))
                old = strength[m]
                strength[m] = min(1.5, max(0.05, old + step if c > 0 else old - step))
                change = strength[m] - old
                c = 0.35 * c
        cr[m] = c
        deltas.append(change)
    return deltas


def _events(n_events: int, n_memories: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    memory_index = rng.integers(0, n_memories, n_events).astype(np.int64)
    direction = rng.choice(np.array([-1, 1], dtype=np.int8), n_events)
    surprise = rng.random(n_events)
    return memory_index, direction, surprise


def _as_lists(state: credit.CreditState) -> credit.CreditState:
    return credit.CreditState(*(a.tolist() for a in state))


def cases(scale: float) -> list[Case]:
    n_events = max(1_000, round(1_000_000 * scale))
    n_memories = max(100, round(10_000 * scale))
    peer_events = max(500, n_events // 50)
    events = _events(n_events, n_memories)
    ours_state = credit.new_state(n_memories)
    peer_state = _as_lists(credit.new_state(n_memories))
    peer_events_lists = [a[:peer_events].tolist() for a in events]

    def ours() -> None:
        credit.apply_events(ours_state, *events)

    def peer() -> None:
        python_loop(peer_state, *peer_events_lists)

    def check() -> None:
        state = credit.new_state(n_memories)
        delta = credit.apply_events(state, *(a[:peer_events].copy() for a in events))
        ref_state = _as_lists(credit.new_state(n_memories))
        ref_delta = python_loop(ref_state, *peer_events_lists)
        if delta.tolist() != ref_delta or any(
            a.tolist() != b for a, b in zip(state, ref_state, strict=True)
        ):
            raise AssertionError("credit.apply_events disagrees with the Python loop")

    return [
        Case(
            kernel="credit.apply_events",
            size=f"{n_events:,} events / {n_memories:,} memories",
            ours=ours,
            peer=peer,
            peer_name="python loop",
            items=n_events,
            item_unit="events",
            peer_items=peer_events,
            check=check,
        )
    ]
