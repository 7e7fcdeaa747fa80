"""Single-call overhead: each checked wrapper against a bare ``@njit`` dispatch.

People who embed the kernels call them one at a time, so what a wrapper adds
to one call matters. Each row times ``calls`` back-to-back calls of a public
wrapper (ours) and the same number of calls of the kernel doing the same work
from :mod:`kernels.unchecked` (the peer: a bare Numba dispatch with no checks,
outputs preallocated), alternated in the same run, on the same 16-element
inputs (a 64-oscillator bank for ``prsc.run``). At full scale ``calls`` is
1000, so the table's milliseconds read as microseconds per call.

Target: the wrapper costs at most 1 µs more per call than the bare dispatch.
``python -m sentient_core.benchmarks.cases_single`` prints the per-call
figures and differences.

Rows
----
* ``single.sedenion.mul``: ``sedenion.mul(a, b)`` vs ``unchecked.sedenion_mul(a, b, out)``.
* ``single.smf.update``: ``smf.update(s, amplitude, phase)`` (64 oscillators) vs
  ``unchecked.smf_update(s, amplitude, phase, eta, out, eps, active)``.
* ``single.smf.entropy``: ``smf.entropy(s)`` vs ``unchecked.smf_entropy(s, eps)``.
* ``single.smf.similarity_pair``: one field vs one field, vs ``unchecked.smf_similarity``.
* ``single.smf.similarity``: one field vs a (1, 16) row matrix, vs
  ``unchecked.smf_similarity_rows`` into a preallocated (1,) output.
* ``single.prsc.run``: ``prsc.run(bank, 1)`` on 64 oscillators vs
  ``unchecked.prsc_run(phase, amplitude, frequency, 1, dt, coupling, decay)``.
"""

from __future__ import annotations

import numpy as np

from kernels import prsc, sedenion, smf, unchecked
from sentient_core.benchmarks.cases import Case

__all__ = ["OVERHEAD_TARGET_S", "cases", "main"]

#: Allowed extra cost of a checked call over the bare dispatch (seconds).
OVERHEAD_TARGET_S = 1e-6
N_OSC = 64
DECAY = 1.0 - prsc.DEFAULT_DAMPING * prsc.DEFAULT_DT


def _case(name: str, size: str, calls: int, ours, peer, peer_name: str, check) -> Case:
    return Case(
        kernel=f"single.{name}",
        size=f"{size}, {calls:,} calls",
        ours=ours,
        peer=peer,
        peer_name=f"bare @njit dispatch ({peer_name})",
        items=calls,
        item_unit="calls",
        target="≤ 1 µs/call over bare",
        target_met=lambda ours_s, peer_s: (
            peer_s is not None and (ours_s - peer_s) / calls <= OVERHEAD_TARGET_S
        ),
        repeat=11,
        check=check,
    )


def _mul(calls: int, rng: np.random.Generator) -> Case:
    a, b, out = rng.standard_normal(16), rng.standard_normal(16), np.empty(16)
    mul, bare = sedenion.mul, unchecked.sedenion_mul

    def ours() -> None:
        for _ in range(calls):
            mul(a, b)

    def peer() -> None:
        for _ in range(calls):
            bare(a, b, out)

    def check() -> None:
        assert bare(a, b, out) == 0
        np.testing.assert_array_equal(mul(a, b), out)

    return _case("sedenion.mul", "16 + 16 float64", calls, ours, peer, "sedenion_mul", check)


def _update(calls: int, rng: np.random.Generator) -> Case:
    s = smf.normalize(rng.standard_normal(16))
    amplitude = rng.uniform(0.0, 0.3, N_OSC)
    phase = rng.uniform(0.0, 2.0 * np.pi, N_OSC)
    out = np.empty(16)
    update, bare = smf.update, unchecked.smf_update
    eta, eps, active = smf.DEFAULT_ETA, smf.EPS, smf.ACTIVE_AMPLITUDE

    def ours() -> None:
        for _ in range(calls):
            update(s, amplitude, phase)

    def peer() -> None:
        for _ in range(calls):
            bare(s, amplitude, phase, eta, out, eps, active)

    def check() -> None:
        assert bare(s, amplitude, phase, eta, out, eps, active) == 0
        np.testing.assert_array_equal(update(s, amplitude, phase), out)

    return _case("smf.update", f"16 field, {N_OSC} osc", calls, ours, peer, "smf_update", check)


def _entropy(calls: int, rng: np.random.Generator) -> Case:
    s = smf.normalize(rng.standard_normal(16))
    entropy, bare, eps = smf.entropy, unchecked.smf_entropy, smf.EPS

    def ours() -> None:
        for _ in range(calls):
            entropy(s)

    def peer() -> None:
        for _ in range(calls):
            bare(s, eps)

    def check() -> None:
        assert entropy(s) == bare(s, eps)

    return _case("smf.entropy", "16 float64", calls, ours, peer, "smf_entropy", check)


def _similarity_pair(calls: int, rng: np.random.Generator) -> Case:
    a, b = rng.standard_normal(16), rng.standard_normal(16)
    similarity, bare, eps = smf.similarity_pair, unchecked.smf_similarity, smf.EPS

    def ours() -> None:
        for _ in range(calls):
            similarity(a, b)

    def peer() -> None:
        for _ in range(calls):
            bare(a, b, eps)

    def check() -> None:
        assert similarity(a, b) == bare(a, b, eps)

    return _case("smf.similarity_pair", "16 vs 16", calls, ours, peer, "smf_similarity", check)


def _similarity_row(calls: int, rng: np.random.Generator) -> Case:
    s, rows, out = rng.standard_normal(16), rng.standard_normal((1, 16)), np.empty(1)
    similarity, bare, eps = smf.similarity, unchecked.smf_similarity_rows, smf.EPS

    def ours() -> None:
        for _ in range(calls):
            similarity(s, rows)

    def peer() -> None:
        for _ in range(calls):
            bare(s, rows, out, eps)

    def check() -> None:
        assert bare(s, rows, out, eps) == 0
        np.testing.assert_array_equal(similarity(s, rows), out)

    return _case(
        "smf.similarity", "16 vs 1×16 rows", calls, ours, peer, "smf_similarity_rows", check
    )


def _run(calls: int, rng: np.random.Generator) -> Case:
    seed = int(rng.integers(0, 1000))
    bank = prsc.init_state(N_OSC, seed=seed)
    bare_bank = prsc.init_state(N_OSC, seed=seed)
    run, bare = prsc.run, unchecked.prsc_run
    phase, amplitude, frequency, _ = bare_bank
    dt, coupling = prsc.DEFAULT_DT, prsc.DEFAULT_COUPLING

    def ours() -> None:
        for _ in range(calls):
            run(bank, 1)

    def peer() -> None:
        for _ in range(calls):
            bare(phase, amplitude, frequency, 1, dt, coupling, DECAY)

    def check() -> None:
        a, b = prsc.init_state(N_OSC, seed=seed), prsc.init_state(N_OSC, seed=seed)
        for _ in range(3):
            run(a, 1)
            bare(b.phase, b.amplitude, b.frequency, 1, dt, coupling, DECAY)
        np.testing.assert_array_equal(a.phase, b.phase)
        np.testing.assert_array_equal(a.amplitude, b.amplitude)

    return _case("prsc.run", f"{N_OSC} osc, 1 step", calls, ours, peer, "prsc_run", check)


def cases(scale: float) -> list[Case]:
    calls = max(10, round(1000 * scale))
    rng = np.random.default_rng(0)
    return [
        build(calls, rng)
        for build in (_mul, _update, _entropy, _similarity_pair, _similarity_row, _run)
    ]


def main(repeat: int = 21) -> None:
    """Print per-call times of every row: bare, wrapper, overhead, met."""
    from kernels.warmup import warmup
    from sentient_core.benchmarks.runner import measure

    warmup()
    print(f"{'call':<22} {'bare µs':>8} {'wrapper µs':>11} {'overhead µs':>12}  met")
    for case in cases(1.0):
        result = measure(case, repeat=repeat)
        assert result.peer_s is not None  # every single-call case has its bare peer
        bare_us = result.peer_s / case.items * 1e6
        ours_us = result.ours_s / case.items * 1e6
        met = "yes" if result.met else "NO"
        print(
            f"{case.kernel.removeprefix('single.'):<22} {bare_us:>8.3f} {ours_us:>11.3f}"
            f" {ours_us - bare_us:>12.3f}  {met}"
        )


if __name__ == "__main__":
    main()
