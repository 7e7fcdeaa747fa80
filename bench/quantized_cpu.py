"""CPU time per query of the exact int8 top-k against the float32 scan, faiss SQ8 and a float16 scan.

``sentient bench --only quantized`` reports wall-clock medians, which on a
shared 2-core machine swing by 2× from run to run; CPU time (all threads of
this process) is steadier. Same codes as the bench (unit rows × 256, the
16 bench queries, k = 10), 1 and 2 threads. Each round times every variant
in turn (A/B/C/… then again), so load from other work falls on all of them
alike; the medians over the rounds are printed with the ratios, and the
floors: a parallel streaming read of the int8 codes and of the float32 codes
(the least time any scan of those bytes takes here). Also printed: the
memory of the codes and, per query, the number of float32 rows the exact
search re-scored. faiss (the ``bench`` extra) is optional: without it the
SQ8 column is left out.

    PYTHONPATH=. python bench/quantized_cpu.py [--rows 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numba
import numpy as np

from sentient_core.benchmarks import cases_holographic, cases_quantized, floors, peers
from sentient_kernels import holographic, quantized
from sentient_kernels.config import prefer_passive_threads
from sentient_kernels.dot_i8 import target_has_vnni

K = 10


def _rounds(arms: dict[str, Callable[[], object]], calls: int, repeat: int) -> dict[str, float]:
    """Median CPU ms per call of each arm, the arms timed in turn ``repeat`` times."""
    for fn in arms.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in arms}
    for _ in range(repeat):
        for name, fn in arms.items():
            t0 = time.process_time()
            fn()
            times[name].append(time.process_time() - t0)
    return {name: float(np.median(v)) * 1e3 / calls for name, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=cases_holographic.FULL_ROWS)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    # Spinning OpenMP workers would count as CPU time of the next call.
    prefer_passive_threads()
    data = cases_holographic._data(args.rows)
    codes, queries = data["codes"], data["queries"]
    t0 = time.perf_counter()
    compact = quantized.quantise(codes)
    print(f"{args.rows:,} rows × {codes.shape[1]}: quantise {time.perf_counter() - t0:.2f} s wall")
    meta = compact.scales.nbytes + compact.bounds.nbytes + compact.norms.nbytes
    print(
        f"memory: float32 codes {codes.nbytes / 1e6:.1f} MB, int8 codes"
        f" {compact.codes.nbytes / 1e6:.1f} MB ({compact.codes.nbytes / codes.nbytes:.3f}),"
        f" with scales/bounds/norms {(compact.codes.nbytes + meta) / 1e6:.1f} MB"
        f" ({(compact.codes.nbytes + meta) / codes.nbytes:.3f})"
    )
    print(f"int8 dots: {'AVX-VNNI vpdpbusd' if target_has_vnni() else 'plain loop (no VNNI)'}")
    faiss = peers.load("faiss")
    index = None
    if faiss is not None:
        index = faiss.IndexScalarQuantizer(
            codes.shape[1], faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        index.train(codes)
        index.add(codes)
    half = codes.astype(np.float16).view(np.uint16)
    scratch = np.empty(codes.shape[0], dtype=np.float32)
    read_i8 = floors.stream_read(compact.codes)
    read_f32 = floors.stream_read(codes)
    nq = len(queries)
    arms: dict[str, Callable[[], object]] = {
        "float32": lambda: [holographic.topk_cosine(codes, q, K, normalized=True) for q in queries],
        "int8": lambda: [
            quantized.exact_topk_quantised(compact, codes, q, K, normalized=True) for q in queries
        ],
        "float16": lambda: [cases_quantized._f16_scan(half, q, scratch) for q in queries],
        # nq reads, so that the per-call figure is one read.
        "floor int8": lambda: [read_i8() for _ in queries],
        "floor f32": lambda: [read_f32() for _ in queries],
    }
    if index is not None:
        sq8_index = index
        arms["SQ8"] = lambda: [sq8_index.search(q[None], K) for q in queries]
    threads = numba.get_num_threads()
    try:
        for nt in sorted({1, threads}):
            numba.set_num_threads(nt)
            if faiss is not None:
                faiss.omp_set_num_threads(nt)
            ms = _rounds(arms, nq, args.repeat)
            line = f"threads={nt} CPU ms/query (median of {args.repeat}):"
            line += f" float32 {ms['float32']:.1f}  int8-exact {ms['int8']:.1f}"
            line += f"  float16 scan {ms['float16']:.1f}"
            if "SQ8" in ms:
                line += f"  faiss SQ8 {ms['SQ8']:.1f}"
            line += f"\n  float32/int8 {ms['float32'] / ms['int8']:.2f}×"
            if "SQ8" in ms:
                line += f"  int8/SQ8 {ms['int8'] / ms['SQ8']:.2f}×"
            line += f"  floors: int8 read {ms['floor int8']:.1f}"
            line += f" (int8-exact {ms['int8'] / ms['floor int8']:.2f}× it),"
            line += f" float32 read {ms['floor f32']:.1f}"
            line += f" (float32 scan {ms['float32'] / ms['floor f32']:.2f}× it)"
            print(line)
    finally:
        numba.set_num_threads(threads)
    cands = [
        quantized.exact_topk_quantised_stats(compact, codes, q, K, normalized=True)[2]
        for q in queries
    ]
    print("float32 rows re-scored per query:", cands)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
