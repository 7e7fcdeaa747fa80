"""The per-file stages of integration (read, extract, chunk, analyse), ahead in a worker thread.

While the integrator observes and commits one file's chunks, the next files are
read, checked against their records (unchanged files are not extracted),
extracted, chunked and analysed (:mod:`~sentient_core.integrate.analysed`:
codes, excitations, keywords, terms, digests; nothing of the observer) by one
worker thread, at most :data:`AHEAD` files ahead, in order. The analysis
kernels and the store's commit release the GIL, so the two threads overlap on
two cores. Plain-text files above the stream threshold are not loaded here: the
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

from sentient_core.encoder import TokenPrimeEncoder
from sentient_core.ingest import (
    IngestError,
    chunk_text,
    extract_bytes,
    kind_of,
    read_bytes,
    safe_path_text,
)
from sentient_core.integrate.analysed import ChunkAnalysis, analyse
from sentient_core.integrate.ledger import FileLedger, bytes_digest
from sentient_core.integrate.summary import StageTimes
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
    found: ChunkAnalysis | None = None
    error: str = ""
    stages: StageTimes = StageTimes()


class Loader:
    """Loads files in order, :data:`AHEAD` ahead, in one worker thread (see the module docstring).

    Parameters
    ----------
    ledger : FileLedger
        Says (read only) whether a file is unchanged.
    encoder : TextEncoder
        The observer's encoder; a token encoder's chunks are analysed here too
        (:func:`~sentient_core.integrate.analysed.analyse`).
    stream_threshold, max_file_bytes, time_budget, chunk_size, chunk_overlap
        As for :class:`~sentient_core.integrate.Integrator`.
    """

    def __init__(
        self,
        ledger: FileLedger,
        encoder: object,
        *,
        stream_threshold: int,
        max_file_bytes: int,
        time_budget: float | None,
        chunk_size: int,
        chunk_overlap: int,
    ) -> None:
        self.ledger = ledger
        self.encoder = encoder
        self.stream_threshold = stream_threshold
        self.max_file_bytes = max_file_bytes
        self.time_budget = time_budget
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def load(self, path: str, size: int) -> Loaded:
        """Read, check, extract, chunk and analyse one file (in the calling thread)."""
        source = safe_path_text(Path(path).resolve())
        shown = safe_path_text(path)
        if size > self.stream_threshold and kind_of(path) in ("txt", "md"):
            return Loaded(path, size, source, shown, streamed=True)
        st = StageTimes()
        try:
            t = time.perf_counter()
            data = read_bytes(path, self.max_file_bytes)
            digest = bytes_digest(data)
            unchanged, old = self.ledger.look(source, digest)
            st.read = time.perf_counter() - t
            if unchanged:
                return Loaded(path, size, source, shown, digest=digest, unchanged=True, stages=st)
            t = time.perf_counter()
            text = extract_bytes(path, data, time_budget=self.time_budget)
            del data
            st.extract = time.perf_counter() - t
            t = time.perf_counter()
            chunks = [c.text for c in chunk_text(text, self.chunk_size, self.chunk_overlap)]
            st.chunk = time.perf_counter() - t
        except (IngestError, OSError) as err:
            why = err.reason if isinstance(err, IngestError) else f"cannot read: {err}"
            return Loaded(path, size, source, shown, error=why)
        found = None
        if chunks and isinstance(self.encoder, TokenPrimeEncoder):
            found = analyse(self.encoder, chunks, st)
        return Loaded(
            path,
            size,
            source,
            shown,
            digest=digest,
            old=old,
            chunks=tuple(chunks),
            found=found,
            stages=st,
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
