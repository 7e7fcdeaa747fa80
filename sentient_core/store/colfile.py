"""The mirror's columns in a mapped file: ``columns.ckpt`` beside ``data.mdb`` (schema 3).

Opening a memory used to unpack every row of the column blocks
(:mod:`sentient_core.store.colblocks`) into the mirror's arrays: 0.19 s at a million
traces, 4.5 s at ten million (the first touch of 1.75 GB of fresh anonymous pages).
This file is a *checkpoint* of those arrays — each trace's id, retired flag
(``valid``), created, last access, strength, importance and SMF orientation, one
page-aligned section per column, native little-endian — over rows ``[0, R)`` as the
blocks held them at one commit. A reader maps each section privately over the first
``R`` rows of the mirror's reserved array (:func:`map_over`: no copy, no decode, pages
read when recall first touches them, and the mirror may write its rows as before:
copy-on-write) and then reads from the blocks only

* the rows at or above ``R`` (appended since), and
* the blocks changed since by an update below ``R`` (retire, decay, update): every
  write of a block below ``R`` puts its number in the ``column_dirty`` sub-database
  in the same transaction (:func:`~sentient_core.store.colblocks.mark_dirty`).

Commit point and crash safety
    The blocks stay the truth; the file is written inside a write transaction
    (:func:`write`: the blocks of that transaction unpacked into a new file, synced,
    renamed over the old one), and the same transaction empties ``column_dirty`` and
    puts a fresh random token and ``R`` in ``meta`` (``colckpt``). A reader uses the
    file only when its header carries the token its snapshot's ``meta`` names; a crash
    between the rename and the commit, or a checkpoint written after the reader's
    snapshot began, leaves a token that does not match: the reader then unpacks every
    block as before (and a writable open writes a new checkpoint). Never a wrong
    mirror, at worst the slower open.

Why schema 3
    A process of an older version would update blocks without marking them dirty;
    the version bump keeps it out (it refuses a store of a newer schema). A schema-2
    store becomes 3 at its first writable open (nothing moves: the checkpoint is
    written by that open, :class:`~sentient_core.memory.writer.Writer`).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from sentient_core.store import colblocks
from sentient_core.store.codefile import MAP_NORESERVE
from sentient_core.store.colblocks import CKPT_KEY as META_KEY
from sentient_core.store.colblocks import DIRTY_DB, checkpoint_meta, dirty_blocks
from sentient_core.store.errors import CorruptRecordError
from sentient_core.store.records import SMF_AXES, key_u64, u64_key
from sentient_kernels import colrows

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "COLUMNS",
    "DIRTY_DB",
    "FILE_NAME",
    "META_KEY",
    "Checkpoint",
    "dirty_blocks",
    "map_over",
    "open_checkpoint",
    "problems",
    "unpack",
    "write",
]

FILE_NAME = "columns.ckpt"
"""Name of the checkpoint in a store's directory."""

COLUMNS: tuple[tuple[str, tuple[int, ...], str], ...] = (
    ("row_id", (), "<i8"),
    ("valid", (), "u1"),
    ("created", (), "<f8"),
    ("last_access", (), "<f8"),
    ("strength", (), "<f8"),
    ("importance", (), "<f8"),
    ("smf", (SMF_AXES,), "<f8"),
)
"""(mirror array, row shape, stored type) of each section, in file order."""

_MAGIC = b"SCCOLS01"
_HEADER = struct.Struct("<8sQd16s")  # magic, rows, the store's creation time, token
PAGE = mmap.ALLOCATIONGRANULARITY
_STAGE_ROWS = 128 * colblocks.BLOCK  # 26 KB a block, 3.3 MB staged: cache-sized passes


def _row_bytes(shape: tuple[int, ...], dtype: str) -> int:
    return np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64))


def _page_up(n: int) -> int:
    return -(-n // PAGE) * PAGE


def layout(rows: int) -> tuple[dict[str, int], int]:
    """Byte offset of each column's section (page-aligned: each maps on its own) and the
    file's size for ``rows`` rows."""
    offsets, at = {}, PAGE  # the header has the first page
    for name, shape, dtype in COLUMNS:
        offsets[name] = at
        at += _page_up(rows * _row_bytes(shape, dtype))
    return offsets, at


class Checkpoint(NamedTuple):
    """An open checkpoint that matches its reader's snapshot: rows ``[0, rows)``."""

    rows: int
    fd: int
    offsets: dict[str, int]

    def close(self) -> None:
        os.close(self.fd)


def open_checkpoint(txn: Txn, directory: Path, created: float, n: int) -> Checkpoint | None:
    """The checkpoint named by ``txn``'s ``meta`` if the file holds it whole and it covers
    at most ``n`` rows, else None (then every block is read)."""
    meta = checkpoint_meta(txn)
    if meta is None or not 0 < meta[1] <= n or not colblocks.enabled(txn):
        return None
    token, rows = meta
    try:
        fd = os.open(directory / FILE_NAME, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        head = os.pread(fd, _HEADER.size, 0)
        offsets, size = layout(rows)
        ok = (
            len(head) == _HEADER.size
            and _HEADER.unpack(head) == (_MAGIC, rows, created, token)
            and os.fstat(fd).st_size == size
        )
    except OSError:
        ok = False
    if not ok:
        os.close(fd)
        return None
    return Checkpoint(rows, fd, offsets)


_libc = None


def _mmap_fixed() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mmap.restype = ctypes.c_void_p
        _libc.mmap.argtypes = (
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        )
    return _libc.mmap


_MAP_FIXED = 0x10  # Linux


def map_over(target: np.ndarray, ckpt: Checkpoint, name: str) -> bool:
    """Map the section ``name`` of ``ckpt`` privately over the first rows of ``target``
    (a whole anonymous reservation: page-aligned, at least the section's pages long);
    False (nothing changed) where the system refuses, the caller then copies."""
    shape, dtype = next((s, d) for n, s, d in COLUMNS if n == name)
    nbytes = _page_up(ckpt.rows * _row_bytes(shape, dtype))
    addr = target.ctypes.data
    if (
        not nbytes
        or os.name != "posix"
        or addr % PAGE
        or target.nbytes < nbytes
        or target.dtype != np.dtype(dtype)
    ):
        return False
    got = _mmap_fixed()(
        addr,
        nbytes,
        mmap.PROT_READ | mmap.PROT_WRITE,
        mmap.MAP_PRIVATE | _MAP_FIXED | MAP_NORESERVE,
        ckpt.fd,
        ckpt.offsets[name],
    )
    # MAP_FIXED replaced the reservation's pages with the file's: the reservation's
    # owner (its Python mmap) unmaps both together.
    return got == addr


def read_into(target: np.ndarray, ckpt: Checkpoint, name: str) -> None:
    """Copy the section ``name`` into ``target[:rows]`` (where :func:`map_over` cannot)."""
    shape, dtype = next((s, d) for n, s, d in COLUMNS if n == name)
    size = ckpt.rows * _row_bytes(shape, dtype)
    view = memoryview(target[: ckpt.rows].data).cast("B")
    got = os.preadv(ckpt.fd, [view], ckpt.offsets[name])
    if got != size:
        raise CorruptRecordError(f"{FILE_NAME}: section {name} is short; run check_integrity")


def unpack(
    txn: Txn,
    first: int,
    stop: int,
    out: dict[str, np.ndarray],
    primes: tuple[np.ndarray, np.ndarray] | None = None,
) -> int | None:
    """Unpack the blocks' rows ``[first, stop)`` into ``out`` (each column's array, indexed
    by row; :data:`COLUMNS`' names), one kernel call per few thousand rows
    (:func:`sentient_kernels.colrows.unpack_rows`).

    ``primes``: ``(counts, flat)`` — each row's prime count goes to ``counts[row - first]``
    and the primes to ``flat``, in row order. Returns how many primes were written, or
    None when some row keeps its primes in its record (``wide``: the caller decodes).

    Raises
    ------
    CorruptRecordError
        A block is not whole rows, rows are missing, or a row has no trace.
    """
    where = f"{txn.store.path} columns"
    if stop <= first:
        return 0
    stage = np.empty(
        (min(_STAGE_ROWS, stop - first + colblocks.BLOCK), colrows.ROW_BYTES), np.uint8
    )
    cap = stage.shape[0]
    scratch = primes is None
    counts, flat = (
        (np.zeros(cap, np.int64), np.empty(cap * colblocks.SLOT, np.int64))
        if primes is None
        else primes
    )
    row_bytes = colrows.ROW_BYTES
    at = 0
    done = first  # rows below are unpacked
    staged = 0

    def flush(at: int) -> int:
        lo, hi = done, done + staged
        views = [out[name][lo:hi] for name, _, _ in COLUMNS]
        row_id, valid, created, last, strength, importance, smf = views
        c = counts[:staged] if scratch else counts[lo - first : hi - first]
        return colrows.unpack_rows(
            stage[:staged],
            0,
            row_id,
            valid,
            (created, last, strength, importance),
            smf,
            c,
            flat,
            0 if scratch else at,
        )

    cur = txn.cursor(colblocks.DB)
    block = first // colblocks.BLOCK
    positioned = cur.set_key(u64_key(block))
    try:
        while positioned and done + staged < stop:
            if key_u64(bytes(cur.key())) != block:
                break
            value = cur.value()
            size = len(value)
            if size % row_bytes:
                raise CorruptRecordError(
                    f"{where}: a block of {size} bytes is not whole rows; run check_integrity"
                )
            lo = done + staged - block * colblocks.BLOCK  # rows of this block below are done
            take = min(size // row_bytes, stop - block * colblocks.BLOCK) - lo
            if lo < 0 or take <= 0:
                break  # a short block before this one: rows missing
            stage[staged : staged + take] = np.frombuffer(
                value, dtype=np.uint8, count=take * row_bytes, offset=lo * row_bytes
            ).reshape(take, row_bytes)
            staged += take
            if staged + colblocks.BLOCK > cap:
                at, done, staged = flush(at), done + staged, 0
            block += 1
            positioned = cur.next()
        if staged:
            at, done, staged = flush(at), done + staged, 0
    except ValueError as exc:
        if "wide" in str(exc):
            return None
        raise CorruptRecordError(f"{where}: {exc}; run check_integrity") from exc
    if done < stop:
        raise CorruptRecordError(f"{where}: rows missing for stored traces; run check_integrity")
    return 0 if scratch else at


def write(txn: Txn, directory: Path, created: float) -> int:
    """Write the checkpoint of every row the blocks of ``txn`` (a write transaction) hold,
    empty ``column_dirty`` and name it in ``meta``; returns its rows (0: nothing written —
    no rows, or a row keeps its primes in its record, when the blocks cannot be unpacked)."""
    rows = txn.counters().row_count
    if not rows or not colblocks.enabled(txn):
        return 0
    offsets, size = layout(rows)
    token = os.urandom(16)
    target = directory / FILE_NAME
    tmp = directory / (FILE_NAME + ".tmp")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        os.ftruncate(fd, size)
        buf = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            buf[: _HEADER.size] = _HEADER.pack(_MAGIC, rows, created, token)
            out = {
                name: np.frombuffer(
                    buf, dtype=dtype, count=rows * int(np.prod(shape, dtype=np.int64)), offset=at
                ).reshape((rows, *shape))
                for (name, shape, dtype), at in zip(COLUMNS, offsets.values(), strict=True)
            }
            done = unpack(txn, 0, rows, out)
            del out
            if done is None:
                return 0
            buf.flush()
        finally:
            buf.close()
        # Synced even for a store that does not sync its commits: a machine crash must
        # not leave a file whose header names rows its pages never received.
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, target)
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)  # the rename itself survives a crash
    finally:
        os.close(dfd)
    if txn.store.has_db(DIRTY_DB):
        txn.raw.drop(txn.db(DIRTY_DB), delete=False)
    txn.raw.put(META_KEY, token + rows.to_bytes(8, "little"), db=txn.db("meta"))
    return rows


def problems(txn: Txn, directory: Path, created: float) -> Iterator[str]:
    """Rows of the checkpoint that disagree with the blocks (not counting the blocks
    marked dirty, which are read from LMDB), or a checkpoint ``meta`` names that the
    file does not hold (for ``check``)."""
    meta = checkpoint_meta(txn)
    if meta is None:
        return
    n = txn.counters().row_count
    ckpt = open_checkpoint(txn, directory, created, n)
    if ckpt is None:
        yield f"columns: {FILE_NAME} is missing, foreign or malformed (rewritten on open)"
        return
    try:
        rows = ckpt.rows
        held = {}
        for name, shape, dtype in COLUMNS:
            held[name] = np.empty((rows, *shape), dtype=dtype)
            read_into(held[name], ckpt, name)
    finally:
        ckpt.close()
    want = {name: np.empty((rows, *shape), dtype=dtype) for name, shape, dtype in COLUMNS}
    if unpack(txn, 0, rows, want) is None:
        return
    dirty = np.zeros(rows, dtype=bool)
    for block in dirty_blocks(txn):
        dirty[block * colblocks.BLOCK : (block + 1) * colblocks.BLOCK] = True
    bad = np.zeros(rows, dtype=bool)
    for name, _, _ in COLUMNS:
        # Compared as bytes: a NaN strength is the same NaN.
        got = held[name].reshape(rows, -1).view(np.uint8)
        bad |= (got != want[name].reshape(rows, -1).view(np.uint8)).any(1)
    bad &= ~dirty
    if bad.any():
        first = np.flatnonzero(bad)[:5].tolist()
        yield (
            f"columns: {int(bad.sum())} row(s) of {FILE_NAME} disagree with the blocks"
            f" (first: {first})"
        )
