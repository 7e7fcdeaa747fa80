"""What grows in the hybrid's MaxScore from one store size to the next (report only).

    python bench/hybrid_growth.py --rows 100000 1000000

On the stores of ``sentient_core.benchmarks.cases_lexical`` (the same 64 queries
× ``--repeat``, k = 10), per size: the median of the hybrid ranking alone
(``lexical.search``), the median of its first step alone (BM25's own top-k by
MaxScore, ``maxscore.topk_unchecked``), how many queries fell back to the cosine
scan over every row (``topk_cosine`` inside ``maxscore_hybrid``, counted by a
wrapper) and what those scans cost, the rows sharing a query term, and the rows
whose exact BM25 passes the BM25 threshold implied by the final k-th hybrid
score — an upper bound of the rows that get a cosine estimate (the threshold
only rises during the pass). Those counts come from the exhaustive BM25 scores
and every row's cosine, outside the timings.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from sentient_core.benchmarks import cases_lexical
from sentient_core.memory import HolographicMemory, lexical
from sentient_kernels import bm25, maxscore, maxscore_hybrid
from sentient_kernels.bm25 import COS_CEIL
from sentient_kernels.config import prefer_passive_threads


def measure(rows: int, repeat: int) -> dict:
    scans = [0, 0.0]
    inner = maxscore_hybrid.topk_cosine

    def counted(*a, **kw):
        t0 = time.perf_counter()
        out = inner(*a, **kw)
        scans[1] += time.perf_counter() - t0
        scans[0] += 1
        return out

    maxscore_hybrid.topk_cosine = counted  # type: ignore[assignment]
    try:
        entry = cases_lexical.build(rows)
        memory = HolographicMemory(entry["store"])
        v = memory.view()
        m, n = v.mirror, v.n
        alpha = lexical.HYBRID_ALPHA
        avgdl = m.lex_total / m.active
        doc_len = np.ascontiguousarray(m.doc_len[:n])
        valid = np.ascontiguousarray(m.valid[:n])
        t_h, t_b, touched, passing = [], [], [], []
        for rep in range(repeat):
            for q in entry["queries"]:
                mq = memory.query(q)
                t0 = time.perf_counter()
                out = lexical.search(
                    v.lexical, m, n, mq.terms, mq.weights, cases_lexical.K, "hybrid", mq.code
                )
                t1 = time.perf_counter()
                maxscore.topk_unchecked(
                    v.lexical.packed,
                    n,
                    m.valid,
                    m.doc_len,
                    float(m.active),
                    avgdl,
                    mq.terms,
                    mq.weights,
                    cases_lexical.K,
                )
                t2 = time.perf_counter()
                t_h.append((t1 - t0) * 1e3)
                t_b.append((t2 - t1) * 1e3)
                if rep == 0:
                    score, idf = bm25.scores(
                        v.lexical.packed,
                        mq.terms,
                        doc_len=doc_len,
                        query_weights=mq.weights,
                        valid=valid,
                        n_docs=float(m.active),
                        avgdl=avgdl,
                    )
                    ceil = float(np.dot(mq.weights, idf))
                    thr = out[1][-1] * (1.0 + alpha) - alpha * COS_CEIL
                    touched.append(int(np.count_nonzero(score)))
                    passing.append(int(np.count_nonzero(score / ceil >= thr)))
    finally:
        maxscore_hybrid.topk_cosine = inner  # type: ignore[assignment]
    return {
        "rows": rows,
        "hybrid_ms": statistics.median(t_h),
        "bm25_step_ms": statistics.median(t_b),
        "scans": scans[0],
        "calls": len(t_h),
        "scan_ms_total": scans[1] * 1e3,
        "sharing_median": statistics.median(touched),
        "passing_median": statistics.median(passing),
        "passing_mean": float(np.mean(passing)),
    }


def main() -> None:
    prefer_passive_threads()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    out = []
    for rows in args.rows:
        r = measure(rows, args.repeat)
        out.append(r)
        print(
            f"{rows:>9d} traces: hybrid {r['hybrid_ms']:.2f} ms (BM25 step {r['bm25_step_ms']:.2f},"
            f" the rest {r['hybrid_ms'] - r['bm25_step_ms']:.2f}); cosine scans {r['scans']} of"
            f" {r['calls']} calls ({r['scan_ms_total']:.0f} ms in all); rows sharing a term"
            f" {r['sharing_median']:.0f}, passing the final threshold {r['passing_median']:.0f}"
            f" (median; mean {r['passing_mean']:.0f})",
            flush=True,
        )
    if len(out) > 1:
        import math

        a, b = out[0], out[-1]
        f = math.log(b["rows"] / a["rows"])
        for key in ("hybrid_ms", "bm25_step_ms"):
            print(f"growth slope {key}: {math.log(b[key] / a[key]) / f:.2f}")
        rest_a = a["hybrid_ms"] - a["bm25_step_ms"]
        rest_b = b["hybrid_ms"] - b["bm25_step_ms"]
        print(f"growth slope of the rest: {math.log(rest_b / rest_a) / f:.2f}")


if __name__ == "__main__":
    main()
