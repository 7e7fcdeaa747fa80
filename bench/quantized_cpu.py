"""CPU time per query of the exact int8 top-k against the float32 scan, faiss SQ8 and a float16 scan.

``sentient bench --only quantized`` reports wall-clock medians, which on a
shared 2-core machine swing by 2× from run to run; CPU time (all threads of
this process) is steadier. Same codes as the bench (unit rows × 256, the
16 bench queries, k = 10), 1 and 2 threads, and per query the number of
float32 rows the exact search re-scored. faiss (the ``bench`` extra) is
optional: without it the SQ8 column is left out.

    PYTHONPATH=. python bench/quantized_cpu.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numba
import numpy as np

from sentient_core.benchmarks import cases_holographic, cases_quantized, peers
from sentient_kernels import holographic, quantized
from sentient_kernels.config import prefer_passive_threads

K = 10


def _cpu_ms(fn: Callable[[], object], calls: int, repeat: int) -> float:
    """Median CPU ms per call over ``repeat`` runs of ``fn`` (which makes ``calls`` calls)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return float(np.median(times)) * 1e3 / calls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=cases_holographic.FULL_ROWS)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    # Spinning OpenMP workers would count as CPU time of the next call.
    prefer_passive_threads()
    data = cases_holographic._data(args.rows)
    codes, queries = data["codes"], data["queries"]
    t0 = time.perf_counter()
    compact = quantized.quantise(codes)
    print(f"{args.rows:,} rows × {codes.shape[1]}: quantise {time.perf_counter() - t0:.2f} s wall")
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
    nq = len(queries)
    threads = numba.get_num_threads()
    try:
        for nt in sorted({1, threads}):
            numba.set_num_threads(nt)
            if faiss is not None:
                faiss.omp_set_num_threads(nt)
            f32 = _cpu_ms(
                lambda: [holographic.topk_cosine(codes, q, K, normalized=True) for q in queries],
                nq,
                args.repeat,
            )
            i8 = _cpu_ms(
                lambda: [
                    quantized.exact_topk_quantised(compact, codes, q, K, normalized=True)
                    for q in queries
                ],
                nq,
                args.repeat,
            )
            f16 = _cpu_ms(
                lambda: [cases_quantized._f16_scan(half, q, scratch) for q in queries],
                nq,
                args.repeat,
            )
            line = f"threads={nt} CPU ms/query: float32 {f32:.1f}  int8-exact {i8:.1f}"
            line += f"  float16 scan {f16:.1f}  float32/int8 {f32 / i8:.2f}×"
            if index is not None:
                sq8 = _cpu_ms(lambda: [index.search(q[None], K) for q in queries], nq, args.repeat)
                line += f"  faiss SQ8 {sq8:.1f}  int8/SQ8 {i8 / sq8:.2f}×"
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
