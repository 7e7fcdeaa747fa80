"""Benchmark cases for :mod:`sentient_kernels.prsc` (oscillator ticks).

Rows
----
* ``prsc.run`` 64 oscillators × 10k ticks in one call (target < 20 ms) against
  the textbook numpy form: the O(N²) pairwise sine matrix, vectorised per tick
  (run on fewer ticks; the ratio is per oscillator-tick).
* ``prsc.run`` at N = 1k, 10k, 100k with ~2M oscillator-ticks per call, so the
  cost per osc-step shows whether a tick is linear in N. Peers: numpy pairwise
  at 1k; at ≥ 10k the pairwise matrix is infeasible (10^10 entries per tick),
  so the peer is numpy's vectorised mean-field loop (the same O(N) algorithm).
* ``prsc.run[step by step]``: 64 oscillators advanced one tick per call from
  ``@njit`` code, 10k calls, on caller-owned work arrays
  (``unchecked.prsc_run_work``). Its floor and first peer is the same 10k ticks
  in one call (what a tick costs); the second peer is the same loop over plain
  ``unchecked.prsc_run``, which allocates and recomputes sin/cos each call.
  Target: ≥ 0.8 of the one-call speed per tick.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from sentient_core.benchmarks.cases import Case
from sentient_kernels import prsc, unchecked
from sentient_kernels.config import jit

# The kernels this module's cases time (``bench --only`` builds no other module's fixtures).
KERNELS = ("prsc.run", "prsc.run[step by step]")

TWO_PI = 2.0 * math.pi
DT = 1.0 / 60.0
COUPLING = 0.3
DAMPING = 0.02


def _copy(state: prsc.PrscState) -> prsc.PrscState:
    return prsc.PrscState(*(x.copy() for x in state))


def numpy_pairwise_run(state: prsc.PrscState, steps: int) -> None:
    """Pairwise O(N²) ticks with numpy, in place."""
    phase, amp, freq = state.phase, state.amplitude, state.frequency
    n = phase.shape[0]
    advance = TWO_PI * freq * DT
    gain = DT * COUPLING / n
    decay = 1.0 - DAMPING * DT
    for _ in range(steps):
        w = np.minimum(1.0, amp + 0.1)
        pull = np.sin(phase[None, :] - phase[:, None]) @ w
        phase += advance + gain * pull
        np.mod(phase, TWO_PI, out=phase)
        amp *= decay
        amp[amp < 1e-10] = 0.0


def numpy_mean_field_run(state: prsc.PrscState, steps: int) -> None:
    """Mean-field O(N) ticks with numpy, in place."""
    phase, amp, freq = state.phase, state.amplitude, state.frequency
    n = phase.shape[0]
    advance = TWO_PI * freq * DT
    gain = DT * COUPLING / n
    decay = 1.0 - DAMPING * DT
    for _ in range(steps):
        w = np.minimum(1.0, amp + 0.1)
        s = np.sin(phase)
        c = np.cos(phase)
        phase += advance + gain * (c * (w @ s) - s * (w @ c))
        np.mod(phase, TWO_PI, out=phase)
        amp *= decay
        amp[amp < 1e-10] = 0.0


def _agreement_check(n: int, peer_run, steps: int = 20):
    def check() -> None:
        ours = prsc.init_state(n, seed=1)
        peer = _copy(ours)
        prsc.run(ours, steps, dt=DT, coupling=COUPLING, damping=DAMPING)
        peer_run(peer, steps)
        gap = np.abs(np.mod(ours.phase - peer.phase + math.pi, TWO_PI) - math.pi).max()
        if gap > 1e-11:
            raise AssertionError(f"prsc.run and peer phases differ by {gap:.3g} rad")
        np.testing.assert_allclose(ours.amplitude, peer.amplitude, rtol=1e-14, atol=0)

    return check


def _ns_per_osc_step_at_1k(steps: int) -> float:
    """Median cost per osc-step of prsc.run at N = 1000 (the linearity reference)."""
    state = prsc.init_state(1000, seed=2)
    prsc.run(state, 1)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        prsc.run(state, steps)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) / (1000 * steps) * 1e9


def _run_case(
    n: int, steps: int, peer, peer_name: str, peer_steps: int, check_steps: int, **extra
) -> Case:
    ours_state = prsc.init_state(n, seed=0)
    peer_state = _copy(ours_state)

    def ours() -> None:
        prsc.run(ours_state, steps, dt=DT, coupling=COUPLING, damping=DAMPING)

    def run_peer() -> None:
        peer(peer_state, peer_steps)

    return Case(
        kernel="prsc.run",
        size=f"{n:,} osc × {steps:,} steps",
        ours=ours,
        peer=run_peer,
        peer_name=peer_name,
        items=n * steps,
        item_unit="osc-steps",
        peer_items=n * peer_steps,
        check=_agreement_check(n, peer, check_steps),
        **extra,
    )


@jit()
def _steps_kept(phase, amplitude, frequency, steps, dt, coupling, decay, trig, parts):
    for _ in range(steps):
        unchecked.prsc_run_work(phase, amplitude, frequency, 1, dt, coupling, decay, trig, parts)


@jit()
def _steps_plain(phase, amplitude, frequency, steps, dt, coupling, decay):
    for _ in range(steps):
        unchecked.prsc_run(phase, amplitude, frequency, 1, dt, coupling, decay)


def _step_by_step_cases(scale: float) -> list[Case]:
    steps = max(100, round(10_000 * scale))
    decay = 1.0 - DAMPING * DT
    kept, plain, whole = (prsc.init_state(64, seed=9) for _ in range(3))
    trig, parts = unchecked.prsc_new_work(64)

    def ours() -> None:
        _steps_kept(*kept[:3], steps, DT, COUPLING, decay, trig, parts)

    def one_call() -> None:
        unchecked.prsc_run(*whole[:3], steps, DT, COUPLING, decay)

    def plain_steps() -> None:
        _steps_plain(*plain[:3], steps, DT, COUPLING, decay)

    def check() -> None:
        a, b = prsc.init_state(64, seed=9), prsc.init_state(64, seed=9)
        t, q = unchecked.prsc_new_work(64)
        _steps_kept(*a[:3], 50, DT, COUPLING, decay, t, q)
        unchecked.prsc_run(*b[:3], 50, DT, COUPLING, decay)
        np.testing.assert_array_equal(a.phase, b.phase)
        np.testing.assert_array_equal(a.amplitude, b.amplitude)

    common: dict[str, Any] = {
        "kernel": "prsc.run[step by step]",
        "size": f"64 osc, {steps:,} one-tick calls from @njit",
        "ours": ours,
        "items": steps,
        "item_unit": "ticks",
        "floor": one_call,
        "floor_name": f"the same {steps:,} ticks in one prsc.run call",
        "check": check,
        "settle": False,
    }
    return [
        Case(
            peer=one_call,
            peer_name=f"{steps:,} ticks in one call",
            target="≥ 0.8 of the one-call speed per tick",
            target_met=lambda o, p: p is not None and p / o >= 0.8,
            **common,
        ),
        Case(
            peer=plain_steps,
            peer_name="one-tick calls of plain prsc_run",
            target="report only (the cost it removes)",
            **common,
        ),
    ]


def cases(scale: float) -> list[Case]:
    out = _step_by_step_cases(scale)
    # 64 × 10k: the learning core's bank over ~3 minutes of 60 Hz ticks.
    steps = max(10, round(10_000 * scale))
    target_rate = 64 * 10_000 / 0.020  # 20 ms per 640k osc-steps
    out.append(
        _run_case(
            64,
            steps,
            numpy_pairwise_run,
            "numpy pairwise O(N²)",
            max(5, steps // 10),
            check_steps=20,
            target="< 20 ms for 64 × 10k steps",
            target_met=lambda ours_s, _p, items=64 * steps: items / ours_s >= target_rate,
        )
    )
    # Scaling rows: ~2M osc-steps per call at scale 1.
    ref_steps = max(1, round(2_000_000 * scale / 1_000))  # = the 1k row's steps
    reference: dict[str, float] = {}

    def within_2x_of_1k(ours_s: float, items: int) -> bool:
        if "ns" not in reference:
            reference["ns"] = _ns_per_osc_step_at_1k(ref_steps)
        return ours_s / items * 1e9 <= 2.0 * reference["ns"]

    for n in (1_000, 10_000, 100_000):
        steps = max(1, round(2_000_000 * scale / n))
        if n == 1_000:
            peer, peer_name = numpy_pairwise_run, "numpy pairwise O(N²)"
            # ~50 ms per pairwise tick at 1k: keep the peer and the check short.
            peer_steps, check_steps = (3, 5) if scale >= 0.1 else (1, 2)
            extra = {} if scale >= 0.1 else {"repeat": 3}
            target, met = "linear in N (reference row)", None
        else:
            peer, peer_name = numpy_mean_field_run, "numpy mean-field O(N)"
            peer_steps = max(1, steps // 4)
            check_steps = min(20, max(2, steps))
            extra = {}
            target = "linear in N: ns/osc-step ≤ 2× the 1k row"
            met = lambda ours_s, _p, items=n * steps: within_2x_of_1k(ours_s, items)  # noqa: E731
        out.append(
            _run_case(
                n,
                steps,
                peer,
                peer_name,
                peer_steps,
                check_steps,
                target=target,
                target_met=met,
                **extra,
            )
        )
    return out
