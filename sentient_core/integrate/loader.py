"""Files read, extracted and chunked ahead, in a worker process.

Reading, extracting (HTML walking, JSON, PDF) and chunking are Python that holds
the GIL: on a thread they only take turns with encoding and committing (a
loading thread measured no gain). A forked worker process does them for the
next few files while this process encodes, observes and commits; it sends back
each file's digest and chunk texts, or why it failed, in file order.

Only files read whole go through it (large plain text is streamed in line).
The worker never touches the store, the observer or a Numba kernel: it is
forked before the commit thread starts, and its work is what
:func:`load` does in line. A file is loaded at most :data:`AHEAD` files ahead
of the one being integrated, so memory stays bounded by a few files.

Off unless asked for (``Integrator(load_ahead=True)``, ``profile --load-ahead``):
on this 2-core machine it took ~0.2 CPU-seconds per 20 MB off the integrating
process but no wall time off the run — the parent's pages written after the
fork are copied (copy-on-write) while the worker lives, submitting to it costs,
and the commit thread already uses the second core.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import deque
from collections.abc import Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor

import msgspec

from sentient_core.ingest import IngestError, chunk_text, extract_bytes, read_bytes
from sentient_core.integrate.ledger import bytes_digest

__all__ = ["AHEAD", "MIN_BYTES", "LoadSettings", "Loaded", "load", "loaded_ahead"]

AHEAD = 4
"""Files loaded ahead of the one being integrated."""
MIN_BYTES = 4 << 20
"""Runs smaller than this load in line (forking costs more than it saves)."""


class LoadSettings(msgspec.Struct, frozen=True):
    """What loading a file depends on (the Integrator's settings)."""

    max_file_bytes: int
    time_budget: float | None
    chunk_size: int
    chunk_overlap: int


class Loaded(msgspec.Struct, frozen=True):
    """A file read whole: its digest and chunk texts, or why it failed.

    ``digest`` is empty when the file could not be read; ``failed`` is the
    reason it is skipped (read or extraction), else empty. ``seconds``:
    read (with the digest), extract, chunk.
    """

    digest: str
    chunks: list[str]
    failed: str
    seconds: tuple[float, float, float]


def load(path: str, settings: LoadSettings) -> Loaded:
    """Read, digest, extract and chunk one file (what the pipeline does in line)."""
    t0 = time.perf_counter()
    try:
        data = read_bytes(path, settings.max_file_bytes)
    except (IngestError, OSError) as err:
        return Loaded("", [], _why(err), (time.perf_counter() - t0, 0.0, 0.0))
    digest = bytes_digest(data)
    t1 = time.perf_counter()
    try:
        text = extract_bytes(path, data, time_budget=settings.time_budget)
    except (IngestError, OSError) as err:
        return Loaded(digest, [], _why(err), (t1 - t0, time.perf_counter() - t1, 0.0))
    del data
    t2 = time.perf_counter()
    chunks = [c.text for c in chunk_text(text, settings.chunk_size, settings.chunk_overlap)]
    return Loaded(digest, chunks, "", (t1 - t0, t2 - t1, time.perf_counter() - t2))


def _why(err: Exception) -> str:
    return err.reason if isinstance(err, IngestError) else f"cannot read: {err}"


def can_fork() -> bool:
    """Whether this platform forks worker processes (Linux and other POSIX systems)."""
    return "fork" in multiprocessing.get_all_start_methods() and hasattr(os, "fork")


def loaded_ahead(
    paths: Sequence[str | None], settings: LoadSettings
) -> Generator[Future[Loaded] | None, None, None]:
    """One future per path, in order, loaded by a worker process at most :data:`AHEAD`
    files ahead (``None`` for a path given as None: a file loaded in line).

    The worker starts on the first call to ``next`` and stops when the iterator
    is closed or exhausted.
    """
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
    try:
        queue: deque[Future[Loaded] | None] = deque()
        todo = iter(paths)
        for path in todo:
            queue.append(None if path is None else pool.submit(load, path, settings))
            if len(queue) > AHEAD:
                yield queue.popleft()
        while queue:
            yield queue.popleft()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
