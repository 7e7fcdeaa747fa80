"""Where ``learner.step`` spends wall time that is not CPU time (issue 25 item 6).

    python bench/learner_wait.py --rows 100000
    python bench/learner_wait.py --rows 100000 --durable

Builds the ``learner.step`` bench (:mod:`sentient_core.benchmarks.cases_learner`)
over a store of ``--rows`` traces and times each step's wall clock and process
CPU, the wall and CPU inside ``Store.write`` (which holds the commit, so the
fsync when ``--durable``), and the step's major page faults and voluntary /
involuntary context switches (``getrusage``): wall − CPU is time the process
waited, on the disk (fsync, major faults: voluntary switches) or for a core
(involuntary switches). Medians over ``--steps`` steps of each row.

Measured on the 2-core dev machine at load ~2 (100k traces): without fsync
wall = CPU (2.0 ms typical step, 1.2 ms with a user question; 0 major faults);
with ``--durable`` 5 and 3 commits a step add ~0.2 ms of fsync each (3.9 and
2.4 ms wall). The bench's own store is not durable, so the 75-84 ms wall for
7.4 ms CPU of the issue's full ``sentient bench`` run was not fsync: this
script's fault and switch counts tell disk waits from waiting for a core.
"""

from __future__ import annotations

import argparse
import functools
import resource
import statistics
import time

from sentient_core.benchmarks import cases as registry
from sentient_core.benchmarks import cases_learner
from sentient_core.store import Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--durable", action="store_true", help="fsync every commit")
    args = parser.parse_args()
    real_open = Store.open.__func__  # type: ignore[attr-defined]

    def opener(cls, path, **kw):
        kw["durable"] = args.durable
        return real_open(cls, path, **kw)

    Store.open = classmethod(opener)  # type: ignore[method-assign,assignment]
    inside = {"n": 0, "wall": 0.0, "cpu": 0.0}
    owner = next(c for c in Store.__mro__ if "write" in c.__dict__)
    real_write = owner.write

    @functools.wraps(real_write)
    def write(self, fn):
        w, c = time.perf_counter(), time.process_time()
        try:
            return real_write(self, fn)
        finally:
            inside["n"] += 1
            inside["wall"] += time.perf_counter() - w
            inside["cpu"] += time.process_time() - c

    owner.write = write  # type: ignore[method-assign]
    try:
        rows = cases_learner.cases(args.rows / 100_000)
        for case in rows:
            for _ in range(3):
                case.ours()
            seen: dict[str, list[float]] = {}
            for _ in range(args.steps):
                inside.update(n=0, wall=0.0, cpu=0.0)
                r0 = resource.getrusage(resource.RUSAGE_SELF)
                w, c = time.perf_counter(), time.process_time()
                case.ours()
                wall, cpu = time.perf_counter() - w, time.process_time() - c
                r1 = resource.getrusage(resource.RUSAGE_SELF)
                for key, value in (
                    ("wall ms", wall * 1e3),
                    ("CPU ms", cpu * 1e3),
                    ("writes", inside["n"]),
                    ("write wall ms", inside["wall"] * 1e3),
                    ("write CPU ms", inside["cpu"] * 1e3),
                    ("major faults", r1.ru_majflt - r0.ru_majflt),
                    ("vol. switches", r1.ru_nvcsw - r0.ru_nvcsw),
                    ("invol. switches", r1.ru_nivcsw - r0.ru_nivcsw),
                ):
                    seen.setdefault(key, []).append(value)
            medians = "  ".join(f"{k} {statistics.median(v):.2f}" for k, v in seen.items())
            print(f"{case.kernel} ({'durable' if args.durable else 'no fsync'}): {medians}")
    finally:
        owner.write = real_write  # type: ignore[method-assign]
        registry.close()


if __name__ == "__main__":
    main()
