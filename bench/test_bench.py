"""pytest-benchmark suites: every row of ``cli.py bench``, ours and peer.

Run with ``make bench`` (or ``python -m pytest bench --benchmark-enable``);
``SENTIENT_BENCH_SCALE=0.01`` for a quick run, ``-k holographic`` to select.
Several table rows time the same call of ours against different peers, so ours
is benchmarked once per (kernel, size) and every available peer once.
"""

from __future__ import annotations

import os

import pytest

from bench.cases import Case, collect

SCALE = float(os.environ.get("SENTIENT_BENCH_SCALE", "1.0"))
CASES = collect(SCALE)
_FIRST = {(c.kernel, c.size): c for c in reversed(CASES)}
SIDES = [(c, "ours") for c in CASES if _FIRST[(c.kernel, c.size)] is c] + [
    (c, "peer") for c in CASES if c.peer is not None
]


def _id(case: Case, side: str) -> str:
    name = f"{side}-{case.kernel}[{case.size}]"
    if side == "peer":
        name += f"-vs-{case.peer_name}"
    return name.replace("×", "x").replace(" ", "_")


@pytest.mark.parametrize(("case", "side"), SIDES, ids=[_id(c, s) for c, s in SIDES])
def test_bench(benchmark, case: Case, side: str) -> None:
    if case.check is not None:
        case.check()
    fn = case.ours if side == "ours" else case.peer
    benchmark.group = f"{case.kernel} {case.size}"
    benchmark.extra_info["peer"] = case.peer_name
    benchmark.extra_info["items"] = (
        case.items if side == "ours" else (case.peer_items or case.items)
    )
    benchmark(fn)
