"""Recall on small stores (1k, 10k traces) against faiss ``IndexFlatIP``, same run.

Issue 25 item 6: a cosine ``memory.recall`` (code query, k = 10, ``touch=False``)
within 1.5× faiss flat at 1k and 10k traces. Each size's store is built through
the real store path (:func:`sentient_core.benchmarks.cases_memory.build_store`),
opened fresh, then timed in interleaved rounds — ours (the full recall: kernel,
hits' records), the bare kernel on the mirror's codes, faiss with its default
threads and faiss on one thread — ``--calls`` back-to-back calls per sample,
medians of ``--rounds`` samples, in µs per call. The ratio is against the faster
of the two faiss figures.

OpenMP threads wait passively, as under the ``sentient`` command
(:func:`~sentient_kernels.config.prefer_passive_threads`): with libgomp's default
spinning, faiss's idle threads spin after each search and take the core from the
calls timed next (ours measured 2–3× slower interleaved with faiss than alone).

    PYTHONPATH=. python bench/small_recall.py [--sizes 1000 10000] [--rounds 30] [--calls 200]
        [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

from sentient_core.benchmarks import peers
from sentient_core.benchmarks.cases_memory import D, K, build_store
from sentient_core.memory import HolographicMemory
from sentient_core.store import codes
from sentient_kernels import holographic
from sentient_kernels.config import prefer_passive_threads


def _per_call(fn, calls: int, clock) -> float:
    t0 = clock()
    for _ in range(calls):
        fn()
    return (clock() - t0) / calls * 1e6


def _sides(memory, matrix, query, k, faiss, cpu: bool) -> dict:
    """The timed calls of one size: the full recall, the bare kernel, faiss (if present)."""
    sides = {
        "recall": lambda: memory.recall(query, k, touch=False),
        "kernel": lambda: holographic.topk_cosine(matrix, query, k),
    }
    if faiss is not None:
        index = faiss.IndexFlatIP(D)
        index.add(matrix)
        q2 = query[None, :]
        threads = faiss.omp_get_max_threads()

        def one_thread():
            faiss.omp_set_num_threads(1)
            try:
                return index.search(q2, k)
            finally:
                faiss.omp_set_num_threads(threads)

        if not cpu:  # a thread's CPU time does not count faiss's other threads
            sides["faiss"] = lambda: index.search(q2, k)
        sides["faiss1"] = one_thread
        ours = [h.row for h in memory.recall(query, k, touch=False)]
        assert set(ours) == set(index.search(q2, k)[1][0].tolist()), "different top-k"
    return sides


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: the calling thread's CPU time (time.thread_time), which a loaded"
        " machine's waits for a core do not inflate; only single-threaded calls can be"
        " timed so (our one-block recall, faiss on one thread), so sizes above"
        f" {holographic.ONE_BLOCK_ROWS} rows and faiss's default threads are left out",
    )
    args = p.parse_args(argv)
    cpu = args.clock == "cpu"
    if cpu and max(args.sizes) > holographic.ONE_BLOCK_ROWS:
        p.error(f"--clock cpu times only sizes up to {holographic.ONE_BLOCK_ROWS} rows")
    clock = time.thread_time if cpu else time.perf_counter
    prefer_passive_threads()  # before faiss loads its OpenMP runtime (see the module doc)
    faiss = peers.load("faiss")
    print(
        f"{'traces':>8} {'recall µs':>10} {'kernel µs':>10} {'faiss µs':>9}"
        f" {'faiss 1-thr µs':>15} {'recall/faiss':>13}"
    )
    for rows in args.sizes:
        store = build_store(rows)["store"]
        memory = HolographicMemory(store)
        with store.read() as txn:
            matrix = codes.read_all(txn)
        rng = np.random.default_rng(rows)
        query = matrix[int(rng.integers(rows))] + 0.05 * rng.standard_normal(D, dtype=np.float32)
        query = (query / np.linalg.norm(query)).astype(np.float32)
        k = min(K, rows)
        sides = _sides(memory, matrix, query, k, faiss, cpu)
        samples: dict[str, list[float]] = {name: [] for name in sides}
        for fn in sides.values():
            fn()
        for _ in range(args.rounds):
            for name, fn in sides.items():
                samples[name].append(_per_call(fn, args.calls, clock))
        med = {name: statistics.median(v) for name, v in samples.items()}
        f, f1 = med.get("faiss", math.nan), med.get("faiss1", math.nan)
        best = min((x for x in (f, f1) if x == x), default=math.nan)  # x == x: not NaN
        ratio = f"{med['recall'] / best:.2f}" if best == best else "—"
        print(
            f"{rows:>8} {med['recall']:>10.1f} {med['kernel']:>10.1f}"
            f" {f:>9.1f} {f1:>15.1f} {ratio:>13}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
