"""pytest-benchmark suite: the learning loop's own overhead per iteration."""

import pytest

from bench.cases_learner import cases

CASES = cases(1.0)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.kernel)
def test_learner_step(benchmark, case):
    benchmark.group = case.kernel
    benchmark(case.ours)
