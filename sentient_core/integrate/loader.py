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
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import TypeVar

import msgspec

from sentient_core.ingest import IngestError, chunk_text, extract_bytes, read_bytes
from sentient_core.integrate.ledger import bytes_digest

__all__ = [
    "AHEAD",
    "MIN_BYTES",
    "READ_AHEAD",
    "LoadSettings",
    "Loaded",
    "ReadFile",
    "extract_file",
    "load",
    "loaded_ahead",
    "read_ahead",
    "read_file",
]

T = TypeVar("T")

AHEAD = 4
"""Files loaded ahead of the one being integrated (by the process)."""
READ_AHEAD = 2
"""Files read ahead of the one being integrated (by the thread)."""
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


class ReadFile(msgspec.Struct, frozen=True):
    """A file's bytes and their digest (``digest`` empty and ``failed`` the reason when
    it could not be read), and the seconds that took."""

    data: bytes
    digest: str
    failed: str
    seconds: float


def read_file(path: str, max_file_bytes: int) -> ReadFile:
    """Read a whole file and digest its bytes (the ``read`` stage)."""
    t0 = time.perf_counter()
    try:
        data = read_bytes(path, max_file_bytes)
    except (IngestError, OSError) as err:
        return ReadFile(b"", "", _why(err), time.perf_counter() - t0)
    return ReadFile(data, bytes_digest(data), "", time.perf_counter() - t0)


def extract_file(path: str, got: ReadFile, settings: LoadSettings) -> Loaded:
    """Extract and chunk a file read by :func:`read_file` (``extract``, ``chunk``)."""
    if not got.digest:
        return Loaded("", [], got.failed, (got.seconds, 0.0, 0.0))
    t1 = time.perf_counter()
    try:
        text = extract_bytes(path, got.data, time_budget=settings.time_budget)
    except (IngestError, OSError) as err:
        return Loaded(got.digest, [], _why(err), (got.seconds, time.perf_counter() - t1, 0.0))
    t2 = time.perf_counter()
    chunks = [c.text for c in chunk_text(text, settings.chunk_size, settings.chunk_overlap)]
    return Loaded(got.digest, chunks, "", (got.seconds, t2 - t1, time.perf_counter() - t2))


def load(path: str, settings: LoadSettings) -> Loaded:
    """Read, digest, extract and chunk one file (what the pipeline does in line)."""
    return extract_file(path, read_file(path, settings.max_file_bytes), settings)


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
    yield from _ahead(pool, paths, AHEAD, load, settings)


def read_ahead(
    paths: Sequence[str | None], max_file_bytes: int
) -> Generator[Future[ReadFile] | None, None, None]:
    """One future per path, in order, read (:func:`read_file`) by a thread at most
    :data:`READ_AHEAD` files ahead (``None`` for a path given as None).

    Reading is system calls and hashing, which release the GIL: on the caller's
    thread each of them waited for the commit thread to hand the GIL back.
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sentient-read")
    yield from _ahead(pool, paths, READ_AHEAD, read_file, max_file_bytes)


def _ahead(
    pool: Executor, paths: Sequence[str | None], depth: int, fn: Callable[..., T], arg: object
) -> Generator[Future[T] | None, None, None]:
    try:
        queue: deque[Future[T] | None] = deque()
        for path in paths:
            queue.append(None if path is None else pool.submit(fn, path, arg))
            if len(queue) > depth:
                yield queue.popleft()
        while queue:
            yield queue.popleft()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
