"""One file read whole, digested, extracted and chunked (what the pipeline does in line).

A forked worker process doing this for the next files was measured and taken out:
on 2 cores it took ~0.2 CPU-seconds per 20 MB off the integrating process but no
wall time off the run (the commit thread already uses the second core), and forking
a process that runs Numba's and the commit's threads is a hazard
(docs/performance.md, "Ingest throughput").
"""

from __future__ import annotations

import time

import msgspec

from sentient_core.ingest import IngestError, chunk_text, extract_bytes, read_bytes
from sentient_core.integrate.ledger import bytes_digest

__all__ = ["LoadSettings", "Loaded", "load"]


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
