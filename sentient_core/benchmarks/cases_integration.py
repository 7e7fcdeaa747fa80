"""Benchmark case for end-to-end durable memory integration (issue 3 item 8).

``integration.files``: ingest a generated corpus of .txt/.md/.html/.json files
(~2000-char chunks) into a fresh LMDB store with batched, durable (fsync)
commits — read, extract, chunk, encode, keywords, observer update, code,
commit — through :class:`sentient_core.integrate.Integrator`. Target
≥ 5,000 chunks/s. The peer writes the same bytes (each chunk's UTF-8 text plus
its 256-float32 code) with raw py-lmdb puts in the same batch size, also
durable, into a fresh environment: the ratio shows what the pipeline costs on
top of the storage floor.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import lmdb
import numpy as np

from sentient_core.benchmarks.cases import Case, on_close
from sentient_core.core import CODE_DIM, Core
from sentient_core.corpus import generate_corpus
from sentient_core.ingest import chunk_text, extract_text
from sentient_core.integrate import DEFAULT_BATCH, Integrator

# The kernels this module's cases time (``bench --only`` builds no other module's fixtures).
KERNELS = ("integration.files",)

TARGET_CHUNKS_PER_S = 5_000.0
_CACHE: dict[int, tuple[Path, list[Path], list[bytes]]] = {}


def _forget(size: int) -> None:
    root = _CACHE.pop(size)[0]
    shutil.rmtree(root, ignore_errors=True)


def _corpus(size: int) -> tuple[Path, list[Path], list[bytes]]:
    if size not in _CACHE:
        root = Path(tempfile.mkdtemp(prefix="sentient-bench-integration-"))
        # Removed at the end of the bench run (or at exit): no folder is left behind.
        on_close(lambda: _forget(size))
        paths = generate_corpus(root / "corpus", size, seed=0)
        rng = np.random.default_rng(0)
        payloads = []
        for p in paths:
            for c in chunk_text(extract_text(p).text):
                code = rng.standard_normal(CODE_DIM).astype(np.float32).tobytes()
                payloads.append(c.text.encode() + code)
        _CACHE[size] = (root, paths, payloads)
    return _CACHE[size]


def _fresh_dir(root: Path, name: str) -> Path:
    path = root / name
    if path.exists():
        shutil.rmtree(path)
    return path


def cases(scale: float) -> list[Case]:
    size = max(int(10_000_000 * scale), 60_000)
    root, paths, payloads = _corpus(size)
    n_chunks = len(payloads)

    def ours() -> None:
        with Core(_fresh_dir(root, "store")) as core:
            summary = Integrator(core.memory, core.observer).ingest(paths)
        if summary.chunks != n_chunks or summary.skipped:
            raise AssertionError(f"ingested {summary.chunks} of {n_chunks} chunks")

    def raw_lmdb() -> None:
        path = _fresh_dir(root, "raw")
        env = lmdb.open(str(path), map_size=1 << 32, sync=True)
        try:
            for start in range(0, n_chunks, DEFAULT_BATCH):
                with env.begin(write=True) as txn:
                    for i in range(start, min(start + DEFAULT_BATCH, n_chunks)):
                        txn.put(i.to_bytes(8, "big"), payloads[i])
        finally:
            env.close()

    def target_met(ours_s: float, _peer: float | None) -> bool:
        return n_chunks / ours_s >= TARGET_CHUNKS_PER_S

    return [
        Case(
            kernel="integration.files",
            size=f"{size / 1e6:.1f} MB, {n_chunks:,} chunks of ≤2000 chars",
            ours=ours,
            peer=raw_lmdb,
            peer_name="raw py-lmdb puts of the same bytes",
            items=n_chunks,
            item_unit="chunks",
            nbytes=size,
            target=f"≥ {TARGET_CHUNKS_PER_S:,.0f} chunks/s end-to-end, durable",
            target_met=target_met,
            repeat=5,
            floor=raw_lmdb,
            floor_name="raw py-lmdb durable puts of the same bytes (the peer)",
        )
    ]
