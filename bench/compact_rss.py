"""Resident file pages of compact-code recall: candidates read by pread vs through the mapping.

A memory opened with ``compact_codes=True`` scans int8 codes and re-scores a few
candidates from the float32 rows. Read through the code file's mapping, each
touched row faults in a whole page-cache folio, which counts in the process's
resident memory (``RssFile``); read with ``pread`` (the default when the store has
a code file) only the rows are copied. For each mode, in a fresh process
(alternated A/B/A/B), this opens a store read-only, recalls one random code, then
``--queries`` more, and reports the growth of ``RssFile`` and the median latency.

    PYTHONPATH=. python bench/compact_rss.py --dir DIR [--queries 32] [--rounds 2]

``DIR`` is a store built by ``bench/ten_million.py --dir DIR --keep``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

D = 256


def status_mb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(directory: Path, mode: str, queries: int, seed: int) -> dict:
    """One mode ("pread" or "map") in this process."""
    from sentient_core.memory import HolographicMemory
    from sentient_core.store import Store
    from sentient_kernels.warmup import warmup

    warmup()
    store = Store.open(directory / "store", code_dim=D, readonly=True)
    memory = HolographicMemory(store, compact_codes=True)
    compact = memory.compact_codes
    assert compact is not None
    if mode == "map":
        compact.gather = None
    rng = np.random.default_rng(seed)
    memory.recall(rng.standard_normal(D).astype(np.float32), k=10, touch=False, rank="cosine")
    before = status_mb("RssFile")
    times = []
    for _ in range(queries):
        q = rng.standard_normal(D).astype(np.float32)
        t = time.perf_counter()
        memory.recall(q, k=10, touch=False, rank="cosine")
        times.append(time.perf_counter() - t)
    grown = status_mb("RssFile") - before
    store.close()
    return {"mode": mode, "file_growth_mb": grown, "median_ms": statistics.median(times) * 1e3}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", choices=("pread", "map"), help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.dir, args.one, args.queries, args.seed)))
        return 0
    rows = []
    for r in range(args.rounds):
        for mode in ("map", "pread"):
            out = subprocess.run(
                [sys.executable, __file__, "--dir", str(args.dir), "--queries",
                 str(args.queries), "--one", mode, "--seed", str(r)],
                check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
            rows.append(json.loads(out.strip().splitlines()[-1]))
            got = rows[-1]
            print(
                f"{mode:<6} RssFile +{got['file_growth_mb']:,.0f} MB over {args.queries}"
                f" queries, median {got['median_ms']:.1f} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
