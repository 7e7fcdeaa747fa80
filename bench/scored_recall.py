"""Scored recall (the learned scorer's overlay inside the scan) against recall without it.

Two levels, each timed interleaved in the same process (median of the calls,
after a warm-up):

``kernel``
    One streaming top-k pass over the same unit float32 rows (D = 256, as the
    memory's codes): ``sentient_kernels.holographic.topk_cosine(normalized=True)``
    against ``sentient_kernels.overlay.topk_scored`` (the overlay inside the cosine scan).
``memory`` (``--memory``)
    The default ``recall`` of a text on a real store (the Zipf-text stores of
    ``sentient_core.benchmarks.cases_lexical``, built once, minutes at 1M):
    ``ScoredRecall.hits(q, 10)`` (the overlay inside the BM25 + cosine
    selection, :mod:`sentient_kernels.scored_hybrid`) against
    ``memory.recall(q, 10, rank="hybrid")`` and ``rank="cosine"``, over the same
    64 queries. The
    first scored call builds the per-trace factor table (a read of every
    record): reported apart, as ``factor table s``.

Run from a checkout::

    python bench/scored_recall.py [--rows 100000 1000000] [--repeats 21] [--memory] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from sentient_kernels.config import prefer_passive_threads
from sentient_kernels.holographic import topk_cosine
from sentient_kernels.overlay import topk_scored


def measure(rows: int, repeats: int, k: int = 10, d: int = 256, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    codes = rng.standard_normal((rows, d), dtype=np.float32)
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    valid = np.ones(rows, dtype=np.uint8)
    static = rng.uniform(-0.3, 0.3, rows)
    last_access = 1.7e9 - rng.uniform(0, 30 * 86400, rows)
    queries = rng.standard_normal((repeats + 1, d), dtype=np.float32)
    cos_t, sc_t = [], []
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        topk_cosine(codes, q, k, normalized=True, valid=valid)
        t1 = time.perf_counter()
        topk_scored(
            codes,
            q,
            k,
            valid=valid,
            static=static,
            last_access=last_access,
            w_cos=1.0,
            w_rec=0.2,
            now=1.7e9,
        )
        t2 = time.perf_counter()
        if i:  # the first pair warms up
            cos_t.append(t1 - t0)
            sc_t.append(t2 - t1)
    c, s = statistics.median(cos_t), statistics.median(sc_t)
    return {
        "level": "kernel",
        "rows": rows,
        "cosine_ms": c * 1e3,
        "scored_ms": s * 1e3,
        "ratio": s / c,
    }


def measure_memory(rows: int, repeat: int = 1) -> dict:
    from sentient_core.benchmarks import cases_lexical
    from sentient_core.memory import HolographicMemory
    from sentient_core.metamemory import MetaMemory
    from sentient_core.metamemory.recall import ScoredRecall

    entry = cases_lexical.build(rows)
    memory = HolographicMemory(entry["store"])
    scored = ScoredRecall(memory, MetaMemory(memory))
    queries = entry["queries"]
    t0 = time.perf_counter()
    scored.hits(queries[0], cases_lexical.K)  # builds the factor table
    table_s = time.perf_counter() - t0
    memory.recall(queries[0], cases_lexical.K, touch=False, rank="hybrid")  # warm
    hy_t, sc_t, co_t, same = [], [], [], 0
    for q in queries * repeat:
        t0 = time.perf_counter()
        plain = memory.recall(q, cases_lexical.K, touch=False, rank="hybrid")
        t1 = time.perf_counter()
        hits = scored.hits(q, cases_lexical.K)
        t2 = time.perf_counter()
        memory.recall(q, cases_lexical.K, touch=False, rank="cosine")
        t3 = time.perf_counter()
        hy_t.append(t1 - t0)
        sc_t.append(t2 - t1)
        co_t.append(t3 - t2)
        same += [h.record.id for h in plain] == [h.record.id for h in hits]
    h, s, c = statistics.median(hy_t), statistics.median(sc_t), statistics.median(co_t)
    return {
        "level": "memory",
        "rows": rows,
        "hybrid_ms": h * 1e3,
        "scored_ms": s * 1e3,
        "cosine_ms": c * 1e3,
        "ratio": s / h,
        "ratio_to_cosine": s / c,
        "factor_table_s": table_s,
        "same_order": same / len(hy_t),
    }


def main() -> int:
    prefer_passive_threads()  # as `sentient` does: no spinning OpenMP threads in the timings
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--repeats", type=int, default=21)
    p.add_argument("--memory", action="store_true", help="also the default recall on a store")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    out = [measure(n, args.repeats) for n in args.rows]
    if args.memory:
        out += [measure_memory(n) for n in args.rows]
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for r in out:
        if r["level"] == "kernel":
            print(
                f"kernel {r['rows']:>9} rows: cosine {r['cosine_ms']:.2f} ms, scored"
                f" {r['scored_ms']:.2f} ms, ratio {r['ratio']:.3f}"
            )
        else:
            print(
                f"memory {r['rows']:>9} traces: hybrid {r['hybrid_ms']:.2f} ms, scored"
                f" {r['scored_ms']:.2f} ms (ratio {r['ratio']:.3f}), cosine-only"
                f" {r['cosine_ms']:.2f} ms (scored/cosine {r['ratio_to_cosine']:.3f}); factor table"
                f" {r['factor_table_s']:.1f} s; same top-10 as the hybrid in"
                f" {r['same_order']:.0%} of queries"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
