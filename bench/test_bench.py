"""pytest-benchmark suites: every row of ``sentient bench``, ours and peer.

The cases live in the installed package (:mod:`sentient_core.benchmarks`); this
folder only holds the pytest-benchmark view of them. Run with ``make bench``
(or ``python -m pytest bench --benchmark-enable``);
``SENTIENT_BENCH_SCALE=0.01`` for a quick run, ``-k holographic`` to select.
Several table rows time the same call of ours against different peers, so ours
is benchmarked once per (kernel, size) and every available peer once; a peer
that is not installed shows up as a skipped test with the install command.
"""

from __future__ import annotations

import os

import pytest

from sentient_core.benchmarks.cases import Case, collect
from sentient_core.benchmarks.peers import PEERS

SCALE = float(os.environ.get("SENTIENT_BENCH_SCALE", "1.0"))
CASES = collect(SCALE)
_FIRST = {(c.kernel, c.size): c for c in reversed(CASES)}
SIDES = [(c, "ours") for c in CASES if _FIRST[(c.kernel, c.size)] is c] + [
    (c, "peer") for c in CASES if c.peer is not None or c.peer_missing is not None
]


def _id(case: Case, side: str) -> str:
    name = f"{side}-{case.kernel}[{case.size}]"
    if side == "peer":
        name += f"-vs-{case.peer_name}"
    return name.replace("×", "x").replace(" ", "_")


def _param(case: Case, side: str):
    marks = ()
    if side == "peer" and case.peer_missing is not None:
        peer = PEERS[case.peer_missing]
        marks = pytest.mark.skip(reason=f"{peer.package} is not installed: {peer.install}")
    return pytest.param(case, side, id=_id(case, side), marks=marks)


@pytest.mark.parametrize(("case", "side"), [_param(c, s) for c, s in SIDES])
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
