"""Scored recall (the learned scorer's overlay inside the scan) against cosine-only recall.

Both are one streaming top-k pass over the same unit float32 rows (D = 256, as
the memory's codes), timed interleaved in the same process (median of N calls
each, after a warm-up): ``kernels.holographic.topk_cosine(normalized=True)``
against ``kernels.overlay.topk_scored``. Run from a checkout::

    python bench/scored_recall.py [--rows 100000 1000000] [--repeats 21] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from kernels.holographic import topk_cosine
from kernels.overlay import topk_scored


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
    return {"rows": rows, "cosine_ms": c * 1e3, "scored_ms": s * 1e3, "ratio": s / c}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--repeats", type=int, default=21)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    out = [measure(n, args.repeats) for n in args.rows]
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for r in out:
            print(
                f"{r['rows']:>9} rows: cosine {r['cosine_ms']:.2f} ms, scored"
                f" {r['scored_ms']:.2f} ms, ratio {r['ratio']:.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
