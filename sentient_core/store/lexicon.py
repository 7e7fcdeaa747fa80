"""A persisted snapshot of the lexical index, so that opening a store does not rebuild it.

The memory's inverted index (:mod:`sentient_core.memory.lexical`) is a list of
posting :class:`~sentient_kernels.segments.Segment`\\ s with their BM25
:class:`~sentient_kernels.segments.Bounds`. Rebuilding it on open reads one
``terms`` value per trace; this file (``lexicon.idx`` beside ``data.mdb``) keeps a
copy of it covering the code rows ``[0, rows)``, which a reader maps (no copy: the
arrays are views of a private mapping, writable as the kernels want them, their pages
read when a query first touches them). The terms of a trace never change once written
(:mod:`sentient_core.store.terms`), so a snapshot stays valid for its rows forever;
the rows appended since are folded in from their stored terms by the loader.
Retirement is not in the snapshot: the mirror's ``valid`` mask excludes retired rows
from every score and statistic, so a snapshot may hold postings of rows retired since
(never of rows it does not cover).

Layout (format :data:`VERSION`, little-endian): ``b"SCLEXIDX"``, the length of the
msgpack :class:`Header` (u64), the header (version, the terms' tokenisation
fingerprint, ``rows``, number of segments, postings, the store's creation time: a
snapshot copied from another store is foreign), then, 8-byte aligned, the item count
of every array (u64) and the arrays: ``doc_len`` (int32 length in tokens of every row
``< rows``, retired rows too), then each segment's (:data:`FIELDS`: ``terms`` …
``tfs``, then its bounds). Written to a temporary file, synced and renamed over the
old one: a reader maps the old snapshot or the new one, whole.

Schema-2 stores kept it as values of the ``lexicon`` sub-database; the migration to
schema 3 drops them (the first writable open writes the file: a missing snapshot means
a rebuild). What the snapshot holds and when it is written belong to the memory; this
module stores, reads and structurally validates it. A file that does not decode as a
snapshot of this version raises :class:`CorruptRecordError` (the loader then
rebuilds; ``check`` reports it).
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec
import numpy as np

from sentient_core.store.codefile import MAP_NORESERVE
from sentient_core.store.errors import CorruptRecordError
from sentient_kernels.segments import BLOCK, Bounds, Segment

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "DB",
    "FIELDS",
    "FILE_NAME",
    "VERSION",
    "Header",
    "Snapshot",
    "clear",
    "header",
    "read",
    "write",
]

DB = "lexicon"
VERSION = 2
"""Format of the snapshot (1: values of the ``lexicon`` sub-database, schema 2); a snapshot
of another version is ignored (rebuilt and rewritten)."""

FILE_NAME = "lexicon.idx"
"""Name of the snapshot in a store's directory."""
_MAGIC = b"SCLEXIDX"

FIELDS: tuple[tuple[str, str], ...] = (
    ("terms", "<u8"),
    ("starts", "<i8"),
    ("rows", "<i4"),
    ("tfs", "<u2"),
    ("blocks", "<i8"),
    ("block_f", "<f8"),
    ("term_f", "<f8"),
    ("params", "<f8"),
)
"""Stored arrays of each segment: the :class:`Segment` fields, then the :class:`Bounds` ones."""


class Header(msgspec.Struct, frozen=True):
    """What the snapshot covers."""

    version: int
    fingerprint: bytes
    rows: int
    segments: int
    postings: int
    created: float = 0.0


class Snapshot(NamedTuple):
    """The lexical index of code rows ``[0, rows)``.

    Attributes
    ----------
    rows : int
    fingerprint : bytes
        The tokenisation the terms come from (:data:`sentient_core.memory.terms.FINGERPRINT`).
    doc_len : (rows,) int32
    segments : list of Segment
        Each over an ascending range of rows, all below ``rows``.
    bounds : list of Bounds
        One per segment.
    """

    rows: int
    fingerprint: bytes
    doc_len: np.ndarray
    segments: list[Segment]
    bounds: list[Bounds]


_HEADER_ENCODER = msgspec.msgpack.Encoder()
_HEADER_DECODER = msgspec.msgpack.Decoder(Header)


def _path(txn: Txn) -> Path:
    return Path(txn.store.path) / FILE_NAME


def clear(txn: Txn) -> None:
    """Drop the snapshot (and a schema-2 store's values of it)."""
    _path(txn).unlink(missing_ok=True)
    if txn.write and txn.store.has_db(DB):
        txn.raw.drop(txn.db(DB), delete=False)


def _align(n: int) -> int:
    return -(-n // 8) * 8


def write(txn: Txn, snap: Snapshot) -> None:
    """Replace the stored snapshot by ``snap`` (called in a write transaction: one writer)."""
    postings = sum(int(s.rows.shape[0]) for s in snap.segments)
    head = Header(
        VERSION, snap.fingerprint, snap.rows, len(snap.segments), postings, txn.store.meta.created
    )
    raw_head = _HEADER_ENCODER.encode(head)
    arrays = [np.ascontiguousarray(snap.doc_len[: snap.rows], "<i4")]
    for seg, bnd in zip(snap.segments, snap.bounds, strict=True):
        for (_, dtype), arr in zip(FIELDS, (*seg, *bnd), strict=True):
            arrays.append(np.ascontiguousarray(arr, dtype))
    counts = np.array([a.shape[0] for a in arrays], dtype="<u8")
    path = _path(txn)
    tmp = path.with_name(FILE_NAME + ".tmp")
    with open(tmp, "wb") as f:
        f.write(_MAGIC + len(raw_head).to_bytes(8, "little") + raw_head)
        at = 16 + len(raw_head)
        for part in (counts, *arrays):
            pad = _align(at) - at
            f.write(b"\0" * pad)
            f.write(part.data)  # the array's own buffer: no bytes object of it is made
            at += pad + part.nbytes
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself survives a crash
    finally:
        os.close(fd)


def _mapped(txn: Txn) -> tuple[Header, mmap.mmap, int] | None:
    """The file's header, its private mapping and the offset after the header; None when
    there is no file or it is of another version (``CorruptRecordError``: malformed)."""
    path = _path(txn)
    where = f"{path}"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size < 16:
            raise CorruptRecordError(f"{where} is too short to be a lexical snapshot")
        buf = mmap.mmap(
            fd, size, flags=mmap.MAP_PRIVATE | MAP_NORESERVE, prot=mmap.PROT_READ | mmap.PROT_WRITE
        )
    except (OSError, ValueError) as exc:
        raise CorruptRecordError(f"{where} cannot be mapped: {exc}") from exc
    finally:
        os.close(fd)
    if bytes(buf[:8]) != _MAGIC:
        raise CorruptRecordError(f"{where} is not a lexical snapshot")
    length = int.from_bytes(buf[8:16], "little")
    if 16 + length > size:
        raise CorruptRecordError(f"{where}: the header runs past the end of the file")
    raw = bytes(buf[16 : 16 + length])
    try:
        head = _HEADER_DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        if _version_of(raw) not in (None, VERSION):
            return None
        raise CorruptRecordError(f"{where}: the header does not decode: {exc}") from exc
    if head.version != VERSION:
        return None
    return head, buf, 16 + length


def header(txn: Txn) -> Header | None:
    """The stored header, or None: no snapshot, one of another format version, or one of
    another store (copied from it)."""
    got = _mapped(txn)
    if got is None or got[0].created != txn.store.meta.created:
        return None
    return got[0]


def _version_of(raw: bytes | memoryview) -> int | None:
    try:
        value = msgspec.msgpack.decode(raw)
    except msgspec.DecodeError:
        return None
    version = value.get("version") if isinstance(value, dict) else None
    return version if isinstance(version, int) else None


def read(txn: Txn) -> Snapshot | None:
    """The stored snapshot (arrays are views of a private mapping of the file, writable),
    or None if there is none (or it is another store's, or of another format version).

    Raises
    ------
    CorruptRecordError
        The file is malformed, or its arrays are not a well-formed index (sizes,
        offsets, ascending terms, rows outside ``[0, rows)``, block layout).
    """
    got = _mapped(txn)
    if got is None or got[0].created != txn.store.meta.created:
        return None
    head, buf, at = got
    where = f"{_path(txn)}"
    n_arrays = 1 + len(FIELDS) * head.segments
    at = _align(at)
    if at + 8 * n_arrays > len(buf):
        raise CorruptRecordError(f"{where}: the array table runs past the end of the file")
    counts = np.frombuffer(buf, dtype="<u8", count=n_arrays, offset=at).tolist()
    at += 8 * n_arrays

    def take(count: int, dtype: str, name: str) -> np.ndarray:
        nonlocal at
        at = _align(at)
        size = count * np.dtype(dtype).itemsize
        if at + size > len(buf):
            raise CorruptRecordError(f"{where}: array {name} runs past the end of the file")
        out = np.frombuffer(buf, dtype=dtype, count=count, offset=at)
        at += size
        return out

    doc_len = take(counts[0], "<i4", "doc_len")
    if doc_len.shape[0] != head.rows or (head.rows and int(doc_len.min()) < 0):
        raise CorruptRecordError(f"{where}: doc_len does not cover the {head.rows} rows")
    segments, bounds = [], []
    total = 0
    for i in range(head.segments):
        arrays = [
            take(counts[1 + len(FIELDS) * i + j], dtype, f"{i:04d}/{name}")
            for j, (name, dtype) in enumerate(FIELDS)
        ]
        seg, bnd = Segment(*arrays[:4]), Bounds(*arrays[4:])
        _validate(seg, bnd, head.rows, f"{where} segment {i}")
        segments.append(seg)
        bounds.append(bnd)
        total += seg.rows.shape[0]
    if total != head.postings:
        raise CorruptRecordError(f"{where}: {total} postings, the header says {head.postings}")
    return Snapshot(head.rows, head.fingerprint, doc_len, segments, bounds)


def _validate(seg: Segment, bnd: Bounds, rows: int, where: str) -> None:
    """Shapes and invariants the kernels rely on (O(terms) + one min/max over the rows)."""
    n_terms = seg.terms.shape[0]
    n_post = seg.rows.shape[0]
    starts = seg.starts
    ok = (
        starts.shape[0] == n_terms + 1
        and seg.tfs.shape[0] == n_post
        and int(starts[0]) == 0
        and int(starts[-1]) == n_post
        and bool((np.diff(starts) > 0).all())
        and bool((seg.terms[1:] > seg.terms[:-1]).all())
        and (n_post == 0 or (int(seg.rows.min()) >= 0 and int(seg.rows.max()) < rows))
        and bnd.blocks.shape[0] == n_terms + 1
        and bnd.term_f.shape[0] == n_terms
        and bnd.params.shape[0] == 3
    )
    if ok:
        per_term = (np.diff(starts) + (BLOCK - 1)) // BLOCK
        layout = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(per_term, out=layout[1:])
        ok = bool((bnd.blocks == layout).all()) and bnd.block_f.shape[0] == int(layout[-1])
    if not ok:
        raise CorruptRecordError(f"{where} is not a well-formed index")
