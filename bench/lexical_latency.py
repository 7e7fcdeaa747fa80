"""Recall latency per query, median and p95: hybrid, BM25, cosine and bm25s, same run.

    python bench/lexical_latency.py                 # 100k and 1M traces (a few minutes)
    python bench/lexical_latency.py --rows 10000

Builds the stores of ``sentient_core.benchmarks.cases_lexical`` (Zipf texts,
codes and terms computed by the memory; bm25s indexes the same token ids) and
times the same queries interleaved: ``memory.recall(q, 10, touch=False,
rank=...)`` for each rank, then bm25s ``retrieve`` (one thread). Also reports
the store's build time and ``HolographicMemory(store)`` open time.
"""

from __future__ import annotations

import argparse
import statistics
import time

from sentient_core.benchmarks import cases_lexical
from sentient_core.memory import HolographicMemory
from sentient_kernels.config import prefer_passive_threads


def main() -> None:
    prefer_passive_threads()  # as `sentient` does: no spinning OpenMP threads in the timings
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3, help="passes over the 64 queries")
    args = parser.parse_args()
    print(f"{'traces':>9s} {'rank':8s} {'median ms':>10s} {'p95 ms':>8s}")
    for rows in args.rows:
        entry = cases_lexical.build(rows)
        opens = []
        for _ in range(3):
            t0 = time.perf_counter()
            HolographicMemory(entry["store"])
            opens.append(time.perf_counter() - t0)
        lat = cases_lexical.latency(rows, repeat=args.repeat)
        for name, v in lat.items():
            print(f"{rows:>9d} {name:8s} {v['median_ms']:10.2f} {v['p95_ms']:8.2f}")
        print(
            f"{rows:>9d} store build {entry['build_s']:.1f} s; memory.open median"
            f" {statistics.median(opens):.2f} s (of {', '.join(f'{t:.2f}' for t in opens)})",
            flush=True,
        )


if __name__ == "__main__":
    main()
