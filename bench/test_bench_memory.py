"""pytest-benchmark suite for sentient_core.memory (same cases as the table)."""

from __future__ import annotations

import pytest

from bench.cases_memory import cases

CASES = cases(1.0)
# Several table rows time the same call of ours against different peers:
# benchmark ours once per (kernel, size) and every available peer.
_FIRST = {(c.kernel, c.size): c for c in reversed(CASES)}
SIDES = [(c, "ours") for c in CASES if _FIRST[(c.kernel, c.size)] is c] + [
    (c, "peer") for c in CASES if c.peer is not None
]


def _id(case, side):
    name = f"{side}-{case.kernel}[{case.size}]"
    if side == "peer":
        name += f"-vs-{case.peer_name}"
    return name.replace("×", "x")


@pytest.mark.parametrize(("case", "side"), SIDES, ids=[_id(c, s) for c, s in SIDES])
def test_memory(benchmark, case, side):
    if case.check is not None:
        case.check()
    fn = case.ours if side == "ours" else case.peer
    benchmark.group = f"{case.kernel} {case.size}"
    benchmark.extra_info["peer"] = case.peer_name
    benchmark.extra_info["items"] = (
        case.items if side == "ours" else (case.peer_items or case.items)
    )
    benchmark.extra_info.update(case.notes)
    benchmark(fn)
