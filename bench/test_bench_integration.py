"""pytest-benchmark suite: end-to-end durable integration vs raw py-lmdb puts."""

import pytest

from bench.cases_integration import cases

CASES = cases(1.0)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.kernel)
@pytest.mark.parametrize("side", ["ours", "peer"])
def test_integration(benchmark, case, side):
    benchmark.group = f"{case.kernel} {case.size}"
    benchmark.pedantic(getattr(case, side), rounds=3, iterations=1)
