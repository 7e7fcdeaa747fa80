"""Code rows in a flat file beside ``data.mdb`` (store schema version 2).

``codes.f32`` holds row ``r`` at bytes ``[r * 4 * code_dim, (r + 1) * 4 * code_dim)``,
native little-endian float32, C order, nothing else: the layout faiss and usearch
use for a memory-mapped index, so a reader maps the file and scans it in place —
opening a store copies no code at all, and the pages are the OS page cache's,
shared by every process that reads the store.

Commit point
    ``Counters.row_count`` in LMDB's ``meta`` says how many rows are stored. A write
    transaction writes its rows into the file at ``row_count`` *before* LMDB commits
    (and ``fdatasync``s the file first on a durable store), then raises the count in
    the same transaction as the trace records. Rows at or above the count are not
    stored: what an aborted or crashed transaction left there is overwritten by the
    next append and never read. Rows below the count never change, so a reader may
    map them once and keep the view across later commits.

One writer
    The file is written only inside LMDB write transactions, which LMDB serialises
    across threads and processes: the file needs no lock of its own.

Views
    :meth:`CodeFile.rows` maps the file privately (``MAP_PRIVATE``, read/write
    protection, ``MAP_NORESERVE``): the array is writable as Numba's kernels expect
    (a read-only array is another Numba type: another compile), a page is the page
    cache's until written, and nothing ever writes a view (the writer goes through
    ``pwrite``), so on Linux a view shows what the file holds. A view stays valid
    after the file grows or the store closes (the mapping lives with the array).

A store of schema version 1 keeps its rows in the ``codes`` sub-database
(:mod:`sentient_core.store.codes`); :func:`~sentient_core.store.codes.migrate` moves
them here at its first writable open.
"""

from __future__ import annotations

import mmap
import os
import threading
from pathlib import Path

import numpy as np

from sentient_core.store.errors import CorruptRecordError, StoreError

__all__ = ["FILE_NAME", "CodeFile"]

FILE_NAME = "codes.f32"
"""Name of the code file in a store's directory."""


def _no_reserve_flag() -> int:
    """``MAP_NORESERVE``: Python 3.11's mmap module lacks the constant; Linux's value on
    x86-64 and arm64 then (a private writable map is otherwise charged up front)."""
    import platform
    import sys

    flag = getattr(mmap, "MAP_NORESERVE", None)
    if flag is not None:
        return int(flag)
    if sys.platform == "linux" and platform.machine() in ("x86_64", "aarch64"):
        return 0x4000
    return 0


MAP_NORESERVE = _no_reserve_flag()


class CodeFile:
    """The code file of one open store (or another file of fixed-width rows).

    Parameters
    ----------
    directory : Path
        The store's directory.
    dim : int
        Values per row.
    writable : bool
        Open for writing (created when missing) or read-only.
    name : str
        File name (:data:`FILE_NAME`, the float32 codes, by default).
    dtype : numpy dtype
        Type of the values (float32 by default).
    """

    def __init__(
        self,
        directory: Path,
        dim: int,
        *,
        writable: bool,
        name: str = FILE_NAME,
        dtype: np.dtype | type = np.float32,
    ) -> None:
        self.path = directory / name
        self.dim = dim
        self.dtype = np.dtype(dtype)
        self.row_bytes = self.dtype.itemsize * dim
        self.writable = writable
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._all = np.empty((0, dim), dtype=self.dtype)  # every row the current map covers

    def _file(self) -> int:
        fd = self._fd
        if fd is None:
            flags = (os.O_RDWR | os.O_CREAT) if self.writable else os.O_RDONLY
            try:
                fd = os.open(self.path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
            except FileNotFoundError:
                raise CorruptRecordError(
                    f"the store at {self.path.parent} keeps rows in {self.path.name}, which is"
                    " missing; restore it from a backup"
                ) from None
            except OSError as exc:
                raise StoreError(f"cannot open {self.path}: {exc}") from exc
            self._fd = fd
        return fd

    def stored_rows(self) -> int:
        """Whole rows the file holds (committed or not)."""
        if self._fd is None and not self.path.exists():
            return 0
        return os.fstat(self._file()).st_size // self.row_bytes

    def write(self, first: int, rows: np.ndarray, *, durable: bool) -> None:
        """Write C-contiguous ``rows`` (of this file's dtype) from row ``first`` on (inside
        the write transaction that commits them; ``durable``: on disk before it returns)."""
        if not self.writable:
            raise StoreError(f"{self.path} is open read-only")
        fd = self._file()
        data = memoryview(rows.data).cast("B")
        offset = first * self.row_bytes
        while data:
            done = os.pwrite(fd, data, offset)
            data, offset = data[done:], offset + done
        if durable:
            os.fdatasync(fd)

    def rows(self, n: int) -> np.ndarray:
        """Rows ``[0, n)`` as a (n, dim) view of the file (no copy).

        Raises
        ------
        CorruptRecordError
            The file holds fewer than ``n`` rows (it was truncated or replaced).
        """
        view = self._all
        if n <= view.shape[0]:
            return view[:n]
        with self._lock:
            if n > self._all.shape[0]:
                self._all = self._map(n)
            return self._all[:n]

    def read_rows(self, rows: np.ndarray) -> np.ndarray:
        """The rows at the ascending indices ``rows``, read with ``pread`` (a copy).

        For a few rows of a large file: a mapping faults in whole page-cache folios
        around each row it touches (about 1.5 MB a row here), which then count in
        the process's resident memory; a read copies only the rows.

        Raises
        ------
        CorruptRecordError
            The file ends before one of the rows.
        """
        idx = np.asarray(rows, dtype=np.int64).tolist()
        out = np.empty((len(idx), self.dim), dtype=self.dtype)
        if not idx:
            return out
        buf = memoryview(out.data).cast("B")
        fd, size = self._file(), self.row_bytes
        i = 0
        while i < len(idx):
            j = i + 1
            while j < len(idx) and idx[j] == idx[j - 1] + 1:
                j += 1  # consecutive rows: one read
            part, offset = buf[i * size : j * size], idx[i] * size
            while part:
                done = os.preadv(fd, [part], offset)
                if done <= 0:
                    raise CorruptRecordError(
                        f"{self.path} ends before row {idx[i]}: the file was truncated or"
                        " replaced; run check_integrity"
                    )
                part, offset = part[done:], offset + done
            i = j
        return out

    def _map(self, n: int) -> np.ndarray:
        have = self.stored_rows()
        if have < n:
            raise CorruptRecordError(
                f"{self.path} holds {have} code rows; the store's counters say {n}:"
                " the file was truncated or replaced; run check_integrity"
            )
        buf = mmap.mmap(
            self._file(),
            have * self.row_bytes,
            flags=mmap.MAP_PRIVATE | MAP_NORESERVE,
            prot=mmap.PROT_READ | mmap.PROT_WRITE,
        )
        return np.frombuffer(buf, dtype=self.dtype, count=have * self.dim).reshape(have, self.dim)

    def copy_to(self, directory: Path, n: int) -> None:
        """Write rows ``[0, n)`` as the same file in ``directory`` (a backup: ``n`` at least
        the copied snapshot's count; rows below it never change)."""
        data = self.rows(n)
        target = directory / self.path.name
        with open(target, "wb") as out:
            step = max(1, (64 << 20) // self.row_bytes)
            for start in range(0, n, step):
                out.write(data[start : start + step].data)
            out.flush()
            os.fsync(out.fileno())

    def sync(self) -> None:
        """``fdatasync`` the file (its rows on disk before a commit counts them)."""
        os.fdatasync(self._file())

    def close(self) -> None:
        """Close the file descriptor (views stay valid)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
