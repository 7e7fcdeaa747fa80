"""Recall latency per query, median and p95: hybrid, BM25, cosine, scored and bm25s, same run.

    python bench/lexical_latency.py                 # 100k and 1M traces (several minutes)
    python bench/lexical_latency.py --rows 10000

Builds the stores of ``sentient_core.benchmarks.cases_lexical`` (Zipf texts,
codes and terms computed by the memory; bm25s indexes the same token ids) and
times the same queries interleaved, one call of each variant per query in turn
(A/B/A/B…): ``memory.recall(q, 10, touch=False, rank=...)`` for each rank,
the default scored recall (``ScoredRecall.recall(q, 10)``, its factor table
built first), bm25s ``retrieve`` (one thread), and the BM25/hybrid/scored
ranking alone (``lexical.search``; the scored one with the scored recall's
table and k = 20, its re-rank pool) with MaxScore and with the exhaustive
accumulation it replaced (same rows and scores; checked per query for the
scored one). Prints each row's ratio to bm25s, and with
several sizes the growth slope ``log(t_large / t_small) / log(n_large / n_small)``
of each median. Also reports the store's build time and
``HolographicMemory(store)`` open time.
"""

from __future__ import annotations

import argparse
import math
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
    medians: dict[int, dict[str, float]] = {}
    print(f"{'traces':>9s} {'variant':26s} {'median ms':>10s} {'p95 ms':>8s} {'/ bm25s':>8s}")
    for rows in args.rows:
        entry = cases_lexical.build(rows)
        opens = []
        for _ in range(3):
            t0 = time.perf_counter()
            HolographicMemory(entry["store"])
            opens.append(time.perf_counter() - t0)
        lat = cases_lexical.latency(rows, repeat=args.repeat)
        peer = lat.get("bm25s", {}).get("median_ms")
        for name, v in lat.items():
            ratio = f"{v['median_ms'] / peer:8.2f}" if peer else f"{'-':>8s}"
            print(f"{rows:>9d} {name:26s} {v['median_ms']:10.2f} {v['p95_ms']:8.2f} {ratio}")
        medians[rows] = {name: v["median_ms"] for name, v in lat.items()}
        print(
            f"{rows:>9d} store build {entry['build_s']:.1f} s; memory.open median"
            f" {statistics.median(opens):.2f} s (of {', '.join(f'{t:.2f}' for t in opens)})",
            flush=True,
        )
    sizes = sorted(medians)
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        print(f"growth slope of the median, {small} -> {large} traces:")
        for name in medians[large]:
            a, b = medians[small].get(name), medians[large][name]
            if a:
                print(f"  {name:26s} {math.log(b / a) / math.log(large / small):5.2f}")


if __name__ == "__main__":
    main()
