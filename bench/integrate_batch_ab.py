"""Integration by batch against chunk by chunk, alternated in one process; with the floor.

    python bench/integrate_batch_ab.py --size-mb 20 --rounds 3

Both paths ingest the same generated corpus into fresh durable stores through
:class:`sentient_core.integrate.Integrator`: the batch path (the token encoder:
one kernel pass per batch for codes, excitations, keywords and terms, one
kernel call observing the batch, digests and records by column, one
transaction per batch with the file records) and the chunk-by-chunk path it is
tested against, as integration ran before it (the same encoder behind a proxy
without ``analyse_many``: the encode and keyword kernels and the term count each
tokenise the batch again, ``process_encoded`` + ``tick`` per chunk, one
``NewTrace`` per chunk checked and digested one by one). They store the same
bytes (``tests/test_integrate_batch.py``). Rounds alternate A/B, B/A so machine load
weighs on both alike; each run also times its floor (raw py-lmdb durable puts
of what it stored, as many commits: ``sentient_core/integrate/floor.py``).
Prints per path: median chunks/s, chunks per CPU-second, the floor and the
share of it, and the per-stage µs/chunk.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sentient_core.core import Core
from sentient_core.corpus import generate_corpus
from sentient_core.encoder import get_encoder
from sentient_core.integrate import STAGES, Integrator
from sentient_core.integrate.floor import raw_put_floor
from sentient_core.observer import Observer
from sentient_kernels.warmup import warmup


class ChunkByChunk:
    """The token encoder without its one-pass batch analysis (the per-chunk path)."""

    def __init__(self) -> None:
        self._enc = get_encoder("token")

    def __getattr__(self, name: str):
        if name == "analyse_many":
            raise AttributeError(name)
        return getattr(self._enc, name)


def run(paths: list[str], batched: bool) -> dict[str, float]:
    with (
        tempfile.TemporaryDirectory(prefix="sentient-bench-integrate-") as tmp,
        Core(Path(tmp) / "store") as core,
    ):
        encoder = get_encoder("token") if batched else ChunkByChunk()
        observer = Observer(encoder=encoder)  # type: ignore[arg-type]
        cpu = time.process_time()
        s = Integrator(core.memory, observer).ingest(paths)
        cpu = time.process_time() - cpu
        floor = raw_put_floor(core.store, s.commits, durable=core.store.durable)
    out = {
        "chunks/s": s.chunks_per_s,
        "chunks/CPU-s": s.chunks / cpu,
        "floor chunks/s": s.chunks / floor.seconds,
        "share of floor": floor.seconds / s.seconds,
    }
    out.update({stage: getattr(s.stages, stage) / s.chunks * 1e6 for stage in STAGES})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    warmup()
    with tempfile.TemporaryDirectory(prefix="sentient-bench-corpus-") as tmp:
        paths = [str(p) for p in generate_corpus(Path(tmp), int(args.size_mb * 1e6), seed=0)]
        runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
        for r in range(args.rounds):
            for batched in (True, False) if r % 2 == 0 else (False, True):
                runs[batched].append(run(paths, batched))
    names = list(runs[True][0])
    print(f"{args.size_mb:g} MB corpus, {args.rounds} rounds, medians")
    print(f"{'':16s} {'by batch':>12s} {'by chunk':>12s}")
    for name in names:
        a = statistics.median(x[name] for x in runs[True])
        b = statistics.median(x[name] for x in runs[False])
        unit = " µs/chunk" if name in STAGES else ""
        print(f"{name + unit:16s} {a:12,.3f} {b:12,.3f}")


if __name__ == "__main__":
    main()
