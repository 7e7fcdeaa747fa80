"""Ten million traces on one machine: build, disk, memory per trace, open and recall.

Issue 25 item 4. Builds ``--rows`` traces through the real store path
(:meth:`HolographicMemory.store_batch` in batches, one durable-off write
transaction each; the codes are given as random unit vectors, so the token
encoder is not what is timed, while the terms, records, column blocks and
prime postings are made by the memory as for any trace), then opens the store
in a **fresh process** and measures there:

* open time (``HolographicMemory(Store.open(...))``: mirror, lexical index, primes);
* resident memory after open (``RssAnon`` and ``VmRSS``) per trace, and the peak
  (``VmHWM``) of the build and of the open/query process;
* recall latency (median and the first, cold, call) for a code query (cosine),
  text queries by BM25 and by the hybrid, and the learned scorer's recall
  (:class:`~sentient_core.metamemory.recall.ScoredRecall`; its first call builds
  the per-trace factor table, reported apart).

Texts are 8–16 words from a Zipf(1.1) law over a 50k-word synthetic vocabulary
(the vocabulary of :mod:`sentient_core.benchmarks.cases_lexical`); queries 2–6
words of the same law. The page cache is not dropped (that needs root and a
quiet machine): the open is a warm-file open, said so in the output.

    PYTHONPATH=. python bench/ten_million.py [--rows 10000000] [--dir DIR] [--keep] [--json]

``--reuse`` with ``--dir`` measures a store an earlier ``--keep`` run left there (no
build; the queries are drawn from the same law with a fixed seed of their own).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

D = 256
K = 10
BATCH = 50_000
N_QUERIES = 32


def status_mb(field: str) -> float:
    """A ``/proc/self/status`` memory field (``RssAnon``, ``VmRSS``, ``VmHWM``), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def _texts(rng: np.random.Generator, vocab: np.ndarray, cdf: np.ndarray, n: int) -> list[str]:
    lengths = rng.integers(8, 17, size=n)
    flat = np.searchsorted(cdf, rng.random(int(lengths.sum())), side="right")
    return [" ".join(vocab[d]) for d in np.split(flat, np.cumsum(lengths)[:-1])]


def _zipf_words() -> tuple[np.random.Generator, np.ndarray, np.ndarray]:
    """The generator after drawing the vocabulary, the vocabulary and its Zipf(1.1) CDF."""
    from sentient_core.benchmarks.cases_lexical import VOCAB, _vocabulary

    rng = np.random.default_rng(20261207)
    vocab = _vocabulary(rng)
    p = 1.0 / np.arange(1, VOCAB + 1) ** 1.1
    return rng, vocab, np.cumsum(p / p.sum())


def build(directory: Path, rows: int) -> dict:
    from sentient_core.memory import HolographicMemory, NewTrace
    from sentient_core.store import Store

    rng, vocab, cdf = _zipf_words()
    store = Store.open(directory / "store", code_dim=D, durable=False, map_size=1 << 36)
    memory = HolographicMemory(store)
    t0 = time.perf_counter()
    last = t0
    for start in range(0, rows, BATCH):
        n = min(BATCH, rows - start)
        codes = rng.standard_normal((n, D), dtype=np.float32)
        codes /= np.linalg.norm(codes, axis=1, keepdims=True)
        texts = _texts(rng, vocab, cdf, n)
        memory.store_batch([NewTrace(text=texts[i], code=codes[i]) for i in range(n)])
        now = time.perf_counter()
        if now - last > 10 or start + n == rows:
            last = now
            done = start + n
            print(
                f"build: {done:,} traces, {done / (now - t0):,.0f}/s, anon"
                f" {status_mb('RssAnon'):,.0f} MB",
                file=sys.stderr,
                flush=True,
            )
    build_s = time.perf_counter() - t0
    queries = [
        " ".join(vocab[q])
        for q in np.split(np.searchsorted(cdf, rng.random(N_QUERIES * 4), side="right"), N_QUERIES)
    ]
    store.close()
    return {
        "rows": rows,
        "build_s": build_s,
        "build_per_s": rows / build_s,
        "build_peak_mb": status_mb("VmHWM"),
        "disk_mb": disk_mb(directory / "store"),
        "queries": queries,
    }


def reused(directory: Path) -> dict:
    """The figures of a store built earlier (``--reuse``): no build, queries of their own."""
    from sentient_core.store import Store

    _, vocab, cdf = _zipf_words()
    qrng = np.random.default_rng(11)
    queries = [
        " ".join(vocab[q])
        for q in np.split(np.searchsorted(cdf, qrng.random(N_QUERIES * 4), side="right"), N_QUERIES)
    ]
    with Store.open(directory / "store", readonly=True) as store, store.read() as txn:
        rows = txn.counters().row_count
    nan = float("nan")
    return {
        "rows": rows,
        "build_s": nan,
        "build_per_s": nan,
        "build_peak_mb": nan,
        "disk_mb": disk_mb(directory / "store"),
        "queries": queries,
    }


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def measure(directory: Path, queries: list[str], compact: bool = False) -> dict:
    """Open and query in this process (run in a fresh one by :func:`main`); ``compact``:
    the memory scans int8 codes for its cosine recalls (``compact_codes=True``)."""
    from sentient_core.memory import HolographicMemory
    from sentient_core.metamemory import MetaMemory
    from sentient_core.metamemory.recall import ScoredRecall
    from sentient_core.store import Store
    from sentient_kernels.config import prefer_passive_threads
    from sentient_kernels.warmup import warmup

    prefer_passive_threads()
    warmup()  # compile (or load) the kernels first: the open is what is timed
    base_anon = status_mb("RssAnon")
    t0, c0 = time.perf_counter(), time.process_time()
    store = Store.open(directory / "store", code_dim=D, durable=False, map_size=1 << 36)
    memory = HolographicMemory(store, compact_codes=compact)
    open_s = time.perf_counter() - t0
    open_cpu_s = time.process_time() - c0  # this process's CPU: robust to a loaded machine
    rows = memory.count
    anon = status_mb("RssAnon") - base_anon
    rss = status_mb("VmRSS")
    rng = np.random.default_rng(7)
    out: dict = {
        "open_s": open_s,
        "open_cpu_s": open_cpu_s,
        "anon_after_open_mb": anon,
        "rss_after_open_mb": rss,
    }
    code_queries = rng.standard_normal((len(queries), D), dtype=np.float32)
    for rank in ("cosine", "bm25", "hybrid"):
        times = []
        for i, q in enumerate(queries):
            query = code_queries[i] if rank == "cosine" else q
            t = time.perf_counter()
            memory.recall(query, K, touch=False, rank=rank)
            times.append(time.perf_counter() - t)
        out[f"{rank}_first_ms"] = times[0] * 1e3
        out[f"{rank}_ms"] = _median_ms(times[1:])
        if rank == "cosine":
            # The process's own memory vs mapped file pages (the float32 codes are the
            # store's code file: page cache, shared and reclaimable).
            out["anon_after_cosine_mb"] = status_mb("RssAnon") - base_anon
            out["file_after_cosine_mb"] = status_mb("RssFile")
    scored = ScoredRecall(memory, MetaMemory(memory))
    t = time.perf_counter()
    scored.hits(queries[0], K)
    out["scored_table_s"] = time.perf_counter() - t
    times = []
    for q in queries[1:]:
        t = time.perf_counter()
        scored.hits(q, K)
        times.append(time.perf_counter() - t)
    out["scored_ms"] = _median_ms(times)
    out["anon_after_scored_mb"] = status_mb("RssAnon") - base_anon
    out["file_after_scored_mb"] = status_mb("RssFile")
    out["peak_mb"] = status_mb("VmHWM")
    out["rows_open"] = rows
    store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--dir", type=Path, default=None, help="build here (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the store afterwards")
    p.add_argument("--json", action="store_true")
    p.add_argument("--reuse", action="store_true", help="measure the store in --dir (no build)")
    p.add_argument("--compact", action="store_true", help="cosine recall over int8 codes")
    p.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child process
    args = p.parse_args(argv)
    if args.measure is not None:
        queries = json.loads(sys.stdin.read())
        print(json.dumps(measure(args.measure, queries, compact=args.compact)))
        return 0
    if args.reuse and args.dir is None:
        p.error("--reuse needs --dir (a store an earlier --keep run left)")
    directory = args.dir or Path(tempfile.mkdtemp(prefix="sentient-ten-million-", dir="/work"))
    directory.mkdir(parents=True, exist_ok=True)
    keep = args.keep or args.reuse
    try:
        built = reused(directory) if args.reuse else build(directory, args.rows)
        child = subprocess.run(
            [sys.executable, __file__, "--measure", str(directory)]
            + (["--compact"] if args.compact else []),
            input=json.dumps(built.pop("queries")),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
        result = {**built, **json.loads(child.stdout.strip().splitlines()[-1])}
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)
    result["anon_bytes_per_trace"] = result["anon_after_open_mb"] * 1e6 / result["rows"]
    result["disk_bytes_per_trace"] = result["disk_mb"] * 1e6 / result["rows"]
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    r = result
    print(f"traces                 {r['rows']:,}")
    if math.isnan(r["build_s"]):
        print("build                  (a store built before: --reuse)")
    else:
        print(
            f"build                  {r['build_s']:.0f} s ({r['build_per_s']:,.0f} traces/s), peak {r['build_peak_mb']:,.0f} MB"
        )
    print(
        f"disk                   {r['disk_mb']:,.0f} MB ({r['disk_bytes_per_trace']:,.0f} B/trace)"
    )
    print(f"open (warm files)      {r['open_s']:.2f} s (CPU {r['open_cpu_s']:.2f} s)")
    print(
        f"resident after open    anon {r['anon_after_open_mb']:,.0f} MB ({r['anon_bytes_per_trace']:,.0f} B/trace), RSS {r['rss_after_open_mb']:,.0f} MB"
    )
    print(
        f"after cosine recalls   anon {r['anon_after_cosine_mb']:,.0f} MB, mapped files {r['file_after_cosine_mb']:,.0f} MB"
        + (" (int8 scan)" if args.compact else "")
    )
    print(
        f"after scored recalls   anon {r['anon_after_scored_mb']:,.0f} MB, mapped files {r['file_after_scored_mb']:,.0f} MB"
    )
    print(f"peak (open + queries)  {r['peak_mb']:,.0f} MB")
    for rank in ("cosine", "bm25", "hybrid"):
        print(
            f"recall {rank:<15} {r[rank + '_ms']:,.1f} ms median (first {r[rank + '_first_ms']:,.1f} ms)"
        )
    print(
        f"recall scored          {r['scored_ms']:,.1f} ms median (factor table {r['scored_table_s']:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
