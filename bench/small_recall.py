"""Recall on small stores (1k, 10k traces) against faiss ``IndexFlatIP``, same run.

Issue 25 item 6: a cosine ``memory.recall`` (code query, k = 10, ``touch=False``)
within 1.5× faiss flat at 1k and 10k traces. Each size's store is built through
the real store path (:func:`sentient_core.benchmarks.cases_memory.build_store`),
opened fresh, then timed in interleaved rounds — ours (the full recall: kernel,
hits' records), the bare kernel on the mirror's codes, faiss — ``--calls``
back-to-back calls per sample, medians of ``--rounds`` samples, in µs per call.

    PYTHONPATH=. python bench/small_recall.py [--sizes 1000 10000] [--rounds 30] [--calls 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from sentient_core.benchmarks import peers
from sentient_core.benchmarks.cases_memory import D, K, build_store
from sentient_core.memory import HolographicMemory
from sentient_core.store import codes
from sentient_kernels import holographic


def _per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def _sides(memory, matrix, query, k, faiss) -> dict:
    """The timed calls of one size: the full recall, the bare kernel, faiss (if present)."""
    sides = {
        "recall": lambda: memory.recall(query, k, touch=False),
        "kernel": lambda: holographic.topk_cosine(matrix, query, k),
    }
    if faiss is not None:
        index = faiss.IndexFlatIP(D)
        index.add(matrix)
        q2 = query[None, :]
        sides["faiss"] = lambda: index.search(q2, k)
        ours = [h.row for h in memory.recall(query, k, touch=False)]
        assert set(ours) == set(index.search(q2, k)[1][0].tolist()), "different top-k"
    return sides


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--calls", type=int, default=200)
    args = p.parse_args(argv)
    faiss = peers.load("faiss")
    print(f"{'traces':>8} {'recall µs':>10} {'kernel µs':>10} {'faiss µs':>9} {'recall/faiss':>13}")
    for rows in args.sizes:
        store = build_store(rows)["store"]
        memory = HolographicMemory(store)
        with store.read() as txn:
            matrix = codes.read_all(txn)
        rng = np.random.default_rng(rows)
        query = matrix[int(rng.integers(rows))] + 0.05 * rng.standard_normal(D, dtype=np.float32)
        query = (query / np.linalg.norm(query)).astype(np.float32)
        k = min(K, rows)
        sides = _sides(memory, matrix, query, k, faiss)
        samples: dict[str, list[float]] = {name: [] for name in sides}
        for fn in sides.values():
            fn()
        for _ in range(args.rounds):
            for name, fn in sides.items():
                samples[name].append(_per_call(fn, args.calls))
        med = {name: statistics.median(v) for name, v in samples.items()}
        f = med.get("faiss")
        ratio = f"{med['recall'] / f:.2f}" if f else "—"
        print(
            f"{rows:>8} {med['recall']:>10.1f} {med['kernel']:>10.1f}"
            f" {f if f else float('nan'):>9.1f} {ratio:>13}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
