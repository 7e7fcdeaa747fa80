"""Fan-out cost of a sharded memory in this process (LocalShards) against one memory, same run.

The first figure of issue 26 item 8, for the in-process backend: the same ``--n``
traces in one memory and in 1, 2 and 4 in-process shards (equal sizes), recalled
with k = 10 and ``touch=False`` by a code query (cosine) and by text queries
(BM25, the hybrid; ``--ranks scored``: the learned scorer's recall, one query per
call, a fresh meta-memory owner per layout), one query per call and in batches of
16 (``recall_batch``). ``--ray``: the same layouts over Ray actors too (one local
Ray for the run: 2 CPUs, no dashboard, a 200 MB object store, its temp dir under
/tmp; needs the ``cluster`` extra; Ray writes an auth token to ``~/.ray``, so set
``HOME`` if it is not writable).
Sides are timed in interleaved rounds (the side order rotates every round), the
median of ``--rounds`` samples of ``--queries`` queries each, in µs per query;
the ratio is against one memory in the same run. Every sharded answer is checked
against one memory's first (the same scores). OpenMP threads wait passively, as
under the ``sentient`` command.

    PYTHONPATH=. python bench/cluster_local.py [--n 20000] [--rounds 11] [--queries 64]
        [--shards 1 2 4] [--ranks cosine bm25 hybrid scored] [--ray]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from sentient_core.cluster import ShardedMemory, ShardedScoredRecall
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.metamemory import MetaMemory
from sentient_core.metamemory.recall import ScoredRecall
from sentient_core.store import Store
from sentient_kernels.config import prefer_passive_threads

DIM = 256
K = 10
BATCH = 16
WORDS = [f"w{i}" for i in range(3000)]


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    p = 1.0 / np.arange(1, len(WORDS) + 1) ** 1.1
    p /= p.sum()
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(20, 120)), p=p)) for _ in range(n)]


def _clock() -> float:
    return 1.7e9


def _build(
    root: Path, n: int, shard_counts: list[int], ray_dir: str | None
) -> tuple[HolographicMemory, dict]:
    rng = np.random.default_rng(0)
    items = [NewTrace(text=t, primes=()) for t in _texts(rng, n)]
    store = Store.open(root / "single", code_dim=DIM, durable=False)
    single = HolographicMemory(store, clock=_clock)  # one time for all: the same recency
    for a in range(0, n, 4096):
        single.store_batch(items[a : a + 4096])
    sharded = {}
    for count in shard_counts:
        for backend in ("local", "ray") if ray_dir else ("local",):
            if backend == "local":
                mem = ShardedMemory.open_local(
                    root / f"s{count}", count, code_dim=DIM, durable=False, clock=_clock
                )
            else:
                mem = ShardedMemory.open_ray(
                    root / f"r{count}",
                    count,
                    code_dim=DIM,
                    durable=False,
                    clock=_clock,
                    temp_dir=ray_dir,
                )
            per = -(-n // count)
            for s in range(count):  # contiguous blocks: global-id order = one memory's order
                for a in range(s * per, min(n, (s + 1) * per), 4096):
                    mem.store_batch(items[a : min(a + 4096, (s + 1) * per, n)], shard=s)
            sharded[f"{count} shards" + (" ray" if backend == "ray" else "")] = mem
    return single, sharded


def _calls(mem, rank: str, queries, codes: np.ndarray, batched: bool):
    """One sample's work: every query, one per call or in batches."""
    if rank == "cosine":
        if batched:
            return lambda: [
                mem.recall_batch(codes[a : a + BATCH], K, touch=False)
                for a in range(0, len(codes), BATCH)
            ]
        return lambda: [mem.recall(c, K, touch=False) for c in codes]
    if batched:
        return lambda: [
            mem.recall_batch(queries[a : a + BATCH], K, touch=False, rank=rank)
            for a in range(0, len(queries), BATCH)
        ]
    return lambda: [mem.recall(q, K, touch=False, rank=rank) for q in queries]


def _scorers(root: Path, single: HolographicMemory, sharded: dict) -> dict:
    """The learned scorer's recall on each side (a meta-memory owner of its own per layout)."""
    out = {"one memory": ScoredRecall(single, MetaMemory(single))}
    for i, (name, mem) in enumerate(sharded.items()):
        owner = HolographicMemory(Store.open(root / f"meta{i}", code_dim=DIM, durable=False))
        out[name] = ShardedScoredRecall(mem, MetaMemory(owner))
    return out


def _check(single, sharded, queries, codes) -> None:
    for mem in sharded.values():
        for rank in ("bm25", "hybrid"):
            for q in queries[:8]:
                a = [h.score for h in single.recall(q, K, touch=False, rank=rank)]
                b = [h.score for h in mem.recall(q, K, touch=False, rank=rank)]
                assert a == b, "a sharded answer differs from one memory's"
        for c in codes[:8]:
            a = [h.score for h in single.recall(c, K, touch=False)]
            b = [h.score for h in mem.recall(c, K, touch=False)]
            assert a == b, "a sharded answer differs from one memory's"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--queries", type=int, default=64)
    p.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--ranks", nargs="+", default=["cosine", "bm25", "hybrid", "scored"])
    p.add_argument("--ray", action="store_true", help="the layouts over Ray actors too")
    args = p.parse_args(argv)
    prefer_passive_threads()  # as the sentient command: no spinning OpenMP threads
    rng = np.random.default_rng(1)
    queries = [" ".join(rng.choice(WORDS[:600], size=4)) for _ in range(args.queries)]
    # Ray's socket paths must stay short: its temp dir is a directory of its own in /tmp.
    with (
        tempfile.TemporaryDirectory(prefix="cluster-bench-") as tmp,
        tempfile.TemporaryDirectory(prefix="sray", dir="/tmp") as ray_dir,
    ):
        if args.ray:  # started here, not by the first layout (whose close would stop it)
            from sentient_core.cluster import ray_backend

            ray_backend.init_ray(tmp, temp_dir=ray_dir)
        t0 = time.perf_counter()
        single, sharded = _build(Path(tmp), args.n, args.shards, ray_dir if args.ray else None)
        print(
            f"built {args.n} traces x (1 + {len(sharded)} layouts) in {time.perf_counter() - t0:.1f} s"
        )
        codes = single.encoder.encode_batch(queries)
        _check(single, sharded, queries, codes)
        sides = {"one memory": single} | sharded
        scorers = _scorers(Path(tmp), single, sharded) if "scored" in args.ranks else {}
        now = _clock() + 3600.0
        for sr in scorers.values():  # the same answers (scores) on every side
            for q in queries[:8]:
                got = [h.score for h in sr.recall(q, K, now=now)]
                assert got == [h.score for h in scorers["one memory"].recall(q, K, now=now)]
        for batched in (False, True):
            for rank in args.ranks:
                if rank == "scored":
                    if batched:
                        continue  # no batch call: the scored recall takes one query
                    work = {
                        name: (lambda sr=sr: [sr.recall(q, K, now=now) for q in queries])
                        for name, sr in scorers.items()
                    }
                else:
                    work = {
                        name: _calls(mem, rank, queries, codes, batched)
                        for name, mem in sides.items()
                    }
                for fn in work.values():
                    fn()  # warm (kernels compiled, caches filled)
                samples: dict[str, list[float]] = {name: [] for name in work}
                names = list(work)
                for r in range(args.rounds):
                    for name in names[r % len(names) :] + names[: r % len(names)]:
                        t = time.perf_counter()
                        work[name]()
                        samples[name].append((time.perf_counter() - t) / len(queries) * 1e6)
                base = statistics.median(samples["one memory"])
                how = f"batches of {BATCH}" if batched else "one per call"
                print(f"{rank:7s} {how}:")
                for name, xs in samples.items():
                    med = statistics.median(xs)
                    print(
                        f"  {name:14s} {med:9.1f} µs/query  ({med / base:.2f}x, +{med - base:.1f} µs)"
                    )
        for mem in sharded.values():
            mem.close()
        if args.ray:
            ray_backend.ray.shutdown()
        for sr in scorers.values():
            if isinstance(sr, ShardedScoredRecall):
                sr.meta.memory.datastore.close()
        single.datastore.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
