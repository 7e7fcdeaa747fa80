"""A snapshot of the prime index in a mapped file: ``primes.idx`` beside ``data.mdb``.

The memory's prime index (prime → the ascending rows whose dominant primes name it)
is a pure function of the rows' primes, and a row's primes never change: the lists
of rows ``[0, R)`` are the same in every later state of the store (a retired row
stays listed; lookups filter it with the mirror's mask). Building them at open is a
counting sort over every row's primes (8 a row: 2 s at 10M traces); reading them
back is mapping this file. The memory writes the snapshot when it writes its
lexical one (:mod:`sentient_core.memory.lexical_persist`: same rows, same cadence)
and folds in the rows above ``R`` at open.

Layout (little-endian): a 64-byte header — magic ``b"SCPRIME1"``, rows ``R``,
``n_keys``, the number of entries, the store's creation time (a snapshot copied
from another store is foreign) — then ``starts`` (int64, ``n_keys + 1``) and the
rows (int64): key ``k``'s rows are ``rows[starts[k]:starts[k + 1]]``.

It is a cache: missing, foreign, stale (``R`` above the store's rows) or malformed
means the counting sort of before, never a wrong index; ``check`` compares it with
the stored primes (:func:`problems`). Written to a temporary file, synced and renamed
over the old one, so a reader maps either the old snapshot or the new one, whole.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sentient_core.store.codefile import MAP_NORESERVE

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["FILE_NAME", "PrimeSnapshot", "problems", "read", "write"]

FILE_NAME = "primes.idx"
"""Name of the snapshot in a store's directory."""

_MAGIC = b"SCPRIME1"
_HEADER = struct.Struct("<8sQQQd24x")  # magic, rows, n_keys, entries, store created; 64 bytes
assert _HEADER.size == 64


class PrimeSnapshot:
    """Rows ``[0, rows)`` of the prime index: ``starts`` (n_keys + 1,) and ``out``."""

    __slots__ = ("out", "rows", "starts")

    def __init__(self, rows: int, starts: np.ndarray, out: np.ndarray) -> None:
        self.rows = rows
        self.starts = starts
        self.out = out


def write(directory: Path, created: float, snap: PrimeSnapshot) -> None:
    """Write ``snap`` as ``directory``'s snapshot (replacing any older one whole)."""
    starts = np.ascontiguousarray(snap.starts, dtype="<i8")
    out = np.ascontiguousarray(snap.out, dtype="<i8")
    n_keys = starts.shape[0] - 1
    header = _HEADER.pack(_MAGIC, snap.rows, n_keys, out.shape[0], created)
    target = directory / FILE_NAME
    tmp = directory / (FILE_NAME + ".tmp")
    with open(tmp, "wb") as f:
        f.write(header)
        f.write(starts.data)
        f.write(out.data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself survives a crash
    finally:
        os.close(fd)


def read(directory: Path, created: float, n: int) -> PrimeSnapshot | None:
    """The snapshot of the store created at ``created`` if it covers at most ``n`` rows and
    is well formed, else None. Its arrays are views of a private mapping of the file."""
    path = directory / FILE_NAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size < _HEADER.size:
            return None
        buf = mmap.mmap(
            fd, size, flags=mmap.MAP_PRIVATE | MAP_NORESERVE, prot=mmap.PROT_READ | mmap.PROT_WRITE
        )
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    magic, rows, n_keys, entries, stamp = _HEADER.unpack_from(buf, 0)
    if magic != _MAGIC or stamp != created or not 0 < rows <= n:
        return None
    if size != _HEADER.size + 8 * (n_keys + 1 + entries):
        return None
    starts = np.frombuffer(buf, dtype="<i8", count=n_keys + 1, offset=_HEADER.size)
    out = np.frombuffer(buf, dtype="<i8", count=entries, offset=_HEADER.size + 8 * (n_keys + 1))
    if starts[0] != 0 or starts[-1] != entries or (n_keys and (np.diff(starts) < 0).any()):
        return None
    # The rows themselves are not scanned here (80M entries at 10M traces: 1.8 s of page
    # faults); a reader keeps only rows in [0, n) of what it looks up, and ``check``
    # compares every entry with the stored primes.
    return PrimeSnapshot(rows, starts, out)


def problems(directory: Path, created: float, txn: Txn) -> Iterator[str]:
    """What is wrong with the stored snapshot: a file that cannot be read, or lists that
    differ from the counting sort of the stored primes of its rows (nothing when there
    is no file, or the store keeps no column blocks to compare with)."""
    from sentient_core.store import colblocks  # the stored primes
    from sentient_kernels.postings import group_rows

    if not (directory / FILE_NAME).exists():
        return
    n = txn.counters().row_count
    snap = read(directory, created, n)
    if snap is None:
        yield f"primes: {FILE_NAME} is foreign, stale or malformed (rebuilt on open)"
        return
    cols = colblocks.load(txn, n)
    if cols is None:
        return
    counts = cols.prime_counts[: snap.rows]
    primes = cols.primes[: int(counts.sum())]
    n_keys = max(snap.starts.shape[0] - 1, int(primes.max()) + 1 if primes.size else 0)
    starts, out = group_rows(np.arange(snap.rows, dtype=np.int64), counts, primes, n_keys)
    held = np.zeros(n_keys + 1, dtype=np.int64)
    held[: snap.starts.shape[0]] = snap.starts
    held[snap.starts.shape[0] :] = snap.starts[-1]
    if not (np.array_equal(held, starts) and np.array_equal(snap.out, out)):
        yield f"primes: {FILE_NAME} differs from the stored primes of its {snap.rows} rows"
