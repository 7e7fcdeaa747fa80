"""pytest-benchmark suite for the observer and kernels.tick (same cases as the table)."""

from __future__ import annotations

import pytest

from bench.cases_observer import cases

CASES = cases(1.0)


@pytest.mark.parametrize("side", ["ours", "peer"])
@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c.kernel}[{c.size}]".replace("×", "x") for c in CASES]
)
def test_observer(benchmark, case, side):
    fn = case.ours if side == "ours" else case.peer
    if side == "ours" and case.check is not None:
        case.check()
    benchmark.group = f"{case.kernel} {case.size}"
    benchmark.extra_info["peer"] = case.peer_name
    benchmark.extra_info["items"] = (
        case.items if side == "ours" else (case.peer_items or case.items)
    )
    benchmark(fn)
