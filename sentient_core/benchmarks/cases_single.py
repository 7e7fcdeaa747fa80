"""Single-call overhead: each checked wrapper against a bare ``@njit`` dispatch.

People who embed the kernels call them one at a time, so what a wrapper adds
to one call matters. Each row times ``calls`` back-to-back calls of a public
wrapper (ours) and the same number of calls of the kernel doing the same work
from :mod:`sentient_kernels.unchecked` (the peer: a bare Numba dispatch with no checks,
outputs preallocated) on the same 16-element inputs (a 64-oscillator bank for
``prsc.run``). At full scale ``calls`` is 1000, so the table's milliseconds
read as microseconds per call.

Noise: a call takes about a microsecond, so each row takes :data:`REPEAT`
samples of ``calls`` calls per side, ours and the bare dispatch interleaved
(first one side, then the other) in the same run, with no sleep between
samples (see ``Case.settle``), and compares the medians.

Target: the wrapper costs at most 1 µs more per call than the bare dispatch.
``python -m sentient_core.benchmarks.cases_single`` prints the per-call
figures in nanoseconds and the differences.

Rows
----
* ``single.sedenion.mul``: ``sedenion.mul(a, b)`` vs ``unchecked.sedenion_mul(a, b, out)``;
  ``[out]``: ``sedenion.mul(a, b, out)`` (no allocation, as the bare call).
* ``single.smf.update``: ``smf.update(s, amplitude, phase)`` (64 oscillators) vs
  ``unchecked.smf_update(s, amplitude, phase, eta, out, eps, active)``;
  ``[out]``: ``smf.update(s, amplitude, phase, eta, out)``.
* ``single.smf.entropy``: ``smf.entropy(s)`` vs ``unchecked.smf_entropy(s, eps)``.
* ``single.smf.similarity_pair``: one field vs one field, vs ``unchecked.smf_similarity``.
* ``single.smf.similarity``: one field vs a (1, 16) row matrix, vs
  ``unchecked.smf_similarity_rows`` into a preallocated (1,) output;
  ``[out]``: ``smf.similarity(s, rows, out)``.
* ``single.prsc.run``: ``prsc.run(bank, 1)`` on 64 oscillators vs
  ``unchecked.prsc_run(phase, amplitude, frequency, 1, dt, coupling, decay)``.
"""

from __future__ import annotations

import numpy as np

from sentient_core.benchmarks.cases import Case
from sentient_kernels import prsc, sedenion, smf, unchecked

# The kernels this module's cases time (``bench --only`` builds no other module's fixtures).
KERNELS = (
    "single.prsc.run",
    "single.sedenion.mul",
    "single.sedenion.mul[out]",
    "single.smf.entropy",
    "single.smf.similarity",
    "single.smf.similarity[out]",
    "single.smf.similarity_pair",
    "single.smf.update",
    "single.smf.update[out]",
)

__all__ = ["KERNELS", "OVERHEAD_TARGET_S", "REPEAT", "cases", "main"]

#: Allowed extra cost of a checked call over the bare dispatch (seconds).
OVERHEAD_TARGET_S = 1e-6
#: Samples per side of every row (each ``calls`` calls long).
REPEAT = 101
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
        repeat=REPEAT,
        settle=False,
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


def _mul_out(calls: int, rng: np.random.Generator) -> Case:
    a, b = rng.standard_normal(16), rng.standard_normal(16)
    mine, out = np.empty(16), np.empty(16)
    mul, bare = sedenion.mul, unchecked.sedenion_mul

    def ours() -> None:
        for _ in range(calls):
            mul(a, b, mine)

    def peer() -> None:
        for _ in range(calls):
            bare(a, b, out)

    def check() -> None:
        assert bare(a, b, out) == 0
        assert mul(a, b, mine) is mine
        np.testing.assert_array_equal(mine, out)

    return _case("sedenion.mul[out]", "16 + 16 float64", calls, ours, peer, "sedenion_mul", check)


def _update(calls: int, rng: np.random.Generator) -> list[Case]:
    s = smf.normalize(rng.standard_normal(16))
    amplitude = rng.uniform(0.0, 0.3, N_OSC)
    phase = rng.uniform(0.0, 2.0 * np.pi, N_OSC)
    mine, out = np.empty(16), np.empty(16)
    update, bare = smf.update, unchecked.smf_update
    eta, eps, active = smf.DEFAULT_ETA, smf.EPS, smf.ACTIVE_AMPLITUDE

    def ours() -> None:
        for _ in range(calls):
            update(s, amplitude, phase)

    def peer() -> None:
        for _ in range(calls):
            bare(s, amplitude, phase, eta, out, eps, active)

    def ours_out() -> None:
        for _ in range(calls):
            update(s, amplitude, phase, eta, mine)

    def check() -> None:
        assert bare(s, amplitude, phase, eta, out, eps, active) == 0
        np.testing.assert_array_equal(update(s, amplitude, phase), out)
        assert update(s, amplitude, phase, eta, mine) is mine
        np.testing.assert_array_equal(mine, out)

    size = f"16 field, {N_OSC} osc"
    return [
        _case("smf.update", size, calls, ours, peer, "smf_update", check),
        _case("smf.update[out]", size, calls, ours_out, peer, "smf_update", check),
    ]


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


def _similarity_row(calls: int, rng: np.random.Generator) -> list[Case]:
    s, rows, out = rng.standard_normal(16), rng.standard_normal((1, 16)), np.empty(1)
    mine = np.empty(1)
    similarity, bare, eps = smf.similarity, unchecked.smf_similarity_rows, smf.EPS

    def ours() -> None:
        for _ in range(calls):
            similarity(s, rows)

    def peer() -> None:
        for _ in range(calls):
            bare(s, rows, out, eps)

    def ours_out() -> None:
        for _ in range(calls):
            similarity(s, rows, mine)

    def check() -> None:
        assert bare(s, rows, out, eps) == 0
        np.testing.assert_array_equal(similarity(s, rows), out)
        assert similarity(s, rows, mine) is mine
        np.testing.assert_array_equal(mine, out)

    size, peer_name = "16 vs 1×16 rows", "smf_similarity_rows"
    return [
        _case("smf.similarity", size, calls, ours, peer, peer_name, check),
        _case("smf.similarity[out]", size, calls, ours_out, peer, peer_name, check),
    ]


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
    out: list[Case] = []
    for build in (_mul, _mul_out, _update, _entropy, _similarity_pair, _similarity_row, _run):
        made = build(calls, rng)
        out.extend(made if isinstance(made, list) else [made])
    return out


def main(repeat: int = REPEAT) -> None:
    """Print per-call times of every row in ns: bare dispatch, wrapper, overhead, met."""
    from sentient_core.benchmarks.runner import measure
    from sentient_kernels.config import prefer_passive_threads
    from sentient_kernels.warmup import warmup

    prefer_passive_threads()  # as `sentient bench` does, before warm-up starts any thread
    warmup()
    print(f"medians of {repeat} interleaved samples of 1,000 calls per side")
    print(f"{'call':<24} {'bare ns':>8} {'wrapper ns':>11} {'overhead ns':>12}  met")
    for case in cases(1.0):
        result = measure(case, repeat=repeat)
        assert result.peer_s is not None  # every single-call case has its bare peer
        bare_ns = result.peer_s / case.items * 1e9
        ours_ns = result.ours_s / case.items * 1e9
        met = "yes" if result.met else "NO"
        print(
            f"{case.kernel.removeprefix('single.'):<24} {bare_ns:>8.0f} {ours_ns:>11.0f}"
            f" {ours_ns - bare_ns:>12.0f}  {met}"
        )


if __name__ == "__main__":
    main()
