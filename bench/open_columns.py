"""Opening a memory: the mirror's columns from the raw blocks against decoding every record.

Builds (through the real store path) a store of ``--rows`` traces, then opens
``HolographicMemory`` on it alternately with the column blocks
(:mod:`sentient_core.store.colblocks`) and with the record decode the blocks replace,
``--rounds`` times each (A/B/A/B), and prints the medians.

    PYTHONPATH=. python bench/open_columns.py [--rows 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from unittest import mock

from sentient_core.benchmarks.cases_memory import build_store
from sentient_core.memory import HolographicMemory
from sentient_core.store import colblocks


def measure(rows: int, rounds: int) -> tuple[list[float], list[float]]:
    """Open times (seconds) with the blocks and with the record decode, interleaved."""
    store = build_store(rows)["store"]
    blocks, decode = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        HolographicMemory(store)
        blocks.append(time.perf_counter() - t)
        with mock.patch.object(colblocks, "load", lambda txn, n: None):
            t = time.perf_counter()
            HolographicMemory(store)
            decode.append(time.perf_counter() - t)
    return blocks, decode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    blocks, decode = measure(args.rows, args.rounds)
    b, d = statistics.median(blocks), statistics.median(decode)
    print(f"open {args.rows:,} traces: blocks {b * 1e3:.0f} ms, record decode {d * 1e3:.0f} ms")
    print(f"ratio {b / d:.2f} (medians of {args.rounds}, interleaved)")


if __name__ == "__main__":
    main()
