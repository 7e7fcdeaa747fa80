"""The file stages of integration (read, extract, chunk), one file ahead in a worker thread.

While the integrator encodes, observes and commits one file's chunks, the next
files are read, checked against their records (unchanged files are not
extracted), extracted and chunked by one worker thread, at most
:data:`AHEAD` files ahead, in order. The kernels and the store's commit
release the GIL, so the worker's extraction runs in their shadow on a second
core. Plain-text files above the stream threshold are not loaded here: the
integrator streams them itself. A failure is returned (``Loaded.error``), never
raised; nothing of a file reaches memory before the integrator takes its
:class:`Loaded`.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from sentient_core.ingest import (
    IngestError,
    chunk_text,
    extract_bytes,
    kind_of,
    read_bytes,
    safe_path_text,
)
from sentient_core.integrate.ledger import FileLedger, bytes_digest
from sentient_core.store import files as store_files

__all__ = ["AHEAD", "Loaded", "Loader"]

AHEAD = 2
"""Files loaded ahead of the one being integrated (their texts are held in RAM)."""


class Loaded(NamedTuple):
    """One file through read, extract and chunk (or why not)."""

    path: str
    size: int
    source: str
    shown: str
    streamed: bool = False
    digest: str = ""
    unchanged: bool = False
    old: store_files.FileRecord | None = None
    chunks: tuple[str, ...] = ()
    error: str = ""
    read: float = 0.0
    extract: float = 0.0
    chunk: float = 0.0


class Loader:
    """Loads files in order, :data:`AHEAD` ahead, in one worker thread (see the module docstring).

    Parameters
    ----------
    ledger : FileLedger
        Says (read only) whether a file is unchanged.
    stream_threshold, max_file_bytes, time_budget, chunk_size, chunk_overlap
        As for :class:`~sentient_core.integrate.Integrator`.
    """

    def __init__(
        self,
        ledger: FileLedger,
        *,
        stream_threshold: int,
        max_file_bytes: int,
        time_budget: float | None,
        chunk_size: int,
        chunk_overlap: int,
    ) -> None:
        self.ledger = ledger
        self.stream_threshold = stream_threshold
        self.max_file_bytes = max_file_bytes
        self.time_budget = time_budget
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def load(self, path: str, size: int) -> Loaded:
        """Read, check, extract and chunk one file (in the calling thread)."""
        source = safe_path_text(Path(path).resolve())
        shown = safe_path_text(path)
        if size > self.stream_threshold and kind_of(path) in ("txt", "md"):
            return Loaded(path, size, source, shown, streamed=True)
        try:
            t0 = time.perf_counter()
            data = read_bytes(path, self.max_file_bytes)
            digest = bytes_digest(data)
            unchanged, old = self.ledger.look(source, digest)
            t1 = time.perf_counter()
            if unchanged:
                return Loaded(
                    path, size, source, shown, digest=digest, unchanged=True, read=t1 - t0
                )
            text = extract_bytes(path, data, time_budget=self.time_budget)
            del data
            t2 = time.perf_counter()
            chunks = tuple(c.text for c in chunk_text(text, self.chunk_size, self.chunk_overlap))
            t3 = time.perf_counter()
        except (IngestError, OSError) as err:
            why = err.reason if isinstance(err, IngestError) else f"cannot read: {err}"
            return Loaded(path, size, source, shown, error=why)
        return Loaded(
            path,
            size,
            source,
            shown,
            digest=digest,
            old=old,
            chunks=chunks,
            read=t1 - t0,
            extract=t2 - t1,
            chunk=t3 - t2,
        )

    def iter_loaded(self, files: Sequence[tuple[str, int]]) -> Generator[Loaded, None, None]:
        """``load`` of each file, in order, computed ahead by the worker; closing the
        iterator cancels what was not started and waits for the rest."""
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-load")
        queued: list[Future[Loaded]] = []
        try:
            nxt = 0
            for _ in range(len(files)):
                while nxt < len(files) and len(queued) <= AHEAD:
                    queued.append(pool.submit(self.load, *files[nxt]))
                    nxt += 1
                yield queued.pop(0).result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
