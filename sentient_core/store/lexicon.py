"""A persisted snapshot of the lexical index, so that opening a store does not rebuild it.

The memory's inverted index (:mod:`sentient_core.memory.lexical`) is a list of
posting :class:`~sentient_kernels.segments.Segment`\\ s with their BM25
:class:`~sentient_kernels.segments.Bounds`. Rebuilding it on open reads one
``terms`` value per trace; this sub-database keeps a copy of it covering the
code rows ``[0, rows)`` as a few large raw little-endian values, read back with
one copy each. The terms of a trace never change once written
(:mod:`sentient_core.store.terms`), so a snapshot stays valid for its rows
forever; the rows appended since are folded in from their stored terms by the
loader. Retirement is not in the snapshot: the mirror's ``valid`` mask excludes
retired rows from every score and statistic, so a snapshot may hold postings of
rows retired since (never of rows it does not cover).

Layout of ``lexicon`` (format :data:`VERSION`):

``header``
    msgpack :class:`Header` (version, the terms' tokenisation fingerprint,
    ``rows``, number of segments, postings).
``doc_len``
    int32 length in tokens of every row ``< rows`` (retired rows too).
``<segment:04d>/<field>``
    The segment's arrays (:data:`FIELDS`: ``terms`` … ``tfs``, then its bounds).

What the snapshot holds and when it is written belong to the memory; this
module stores, reads and structurally validates it. A value that does not
decode as a snapshot of this version raises :class:`CorruptRecordError` (the
loader then rebuilds; ``check`` reports it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import msgspec
import numpy as np

from sentient_core.store.errors import CorruptRecordError
from sentient_kernels.segments import BLOCK, Bounds, Segment

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["DB", "FIELDS", "VERSION", "Header", "Snapshot", "clear", "header", "read", "write"]

DB = "lexicon"
VERSION = 1
"""Format of the snapshot; a snapshot of another version is ignored (rebuilt and rewritten)."""

HEADER_KEY = b"header"
DOC_LEN_KEY = b"doc_len"

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


def _key(segment: int, field: str) -> bytes:
    return b"%04d/" % segment + field.encode()


def clear(txn: Txn) -> None:
    """Drop the snapshot (the sub-database stays)."""
    txn.raw.drop(txn.db(DB), delete=False)


def write(txn: Txn, snap: Snapshot) -> None:
    """Replace the stored snapshot by ``snap`` (in the caller's write transaction)."""
    clear(txn)
    db = txn.db(DB)
    put = txn.raw.put
    postings = sum(int(s.rows.shape[0]) for s in snap.segments)
    head = Header(VERSION, snap.fingerprint, snap.rows, len(snap.segments), postings)
    put(HEADER_KEY, _HEADER_ENCODER.encode(head), db=db)
    put(DOC_LEN_KEY, np.ascontiguousarray(snap.doc_len[: snap.rows], "<i4").tobytes(), db=db)
    for i, (seg, bnd) in enumerate(zip(snap.segments, snap.bounds, strict=True)):
        for (name, dtype), arr in zip(FIELDS, (*seg, *bnd), strict=True):
            # LMDB copies the value from the buffer: no bytes object of the array is made.
            put(_key(i, name), np.ascontiguousarray(arr, dtype).data, db=db)


def header(txn: Txn) -> Header | None:
    """The stored header, or None: no snapshot, or one of another format version."""
    if not txn.store.has_db(DB):
        return None
    raw = txn.get(DB, HEADER_KEY)
    if raw is None:
        return None
    try:
        head = _HEADER_DECODER.decode(raw)
    except msgspec.DecodeError as exc:
        if _version_of(raw) not in (None, VERSION):
            return None
        raise CorruptRecordError(f"{txn.store.path} lexicon header does not decode: {exc}") from exc
    return head if head.version == VERSION else None


def _version_of(raw: bytes | memoryview) -> int | None:
    try:
        value = msgspec.msgpack.decode(raw)
    except msgspec.DecodeError:
        return None
    version = value.get("version") if isinstance(value, dict) else None
    return version if isinstance(version, int) else None


def read(txn: Txn) -> Snapshot | None:
    """The stored snapshot (arrays copied out of the map, writable), or None if there is none.

    Raises
    ------
    CorruptRecordError
        A value is missing or its arrays are not a well-formed index (sizes,
        offsets, ascending terms, rows outside ``[0, rows)``, block layout).
    """
    head = header(txn)
    if head is None:
        return None
    where = f"{txn.store.path} lexicon"
    doc_len = _array(txn, DOC_LEN_KEY, "<i4", np.int32, where)
    if doc_len.shape[0] != head.rows or (head.rows and int(doc_len.min()) < 0):
        raise CorruptRecordError(f"{where}: doc_len does not cover the {head.rows} rows")
    segments, bounds = [], []
    total = 0
    for i in range(head.segments):
        arrays = [
            _array(txn, _key(i, name), dtype, np.dtype(dtype).newbyteorder("="), where)
            for name, dtype in FIELDS
        ]
        seg, bnd = Segment(*arrays[:4]), Bounds(*arrays[4:])
        _validate(seg, bnd, head.rows, f"{where} segment {i}")
        segments.append(seg)
        bounds.append(bnd)
        total += seg.rows.shape[0]
    if total != head.postings:
        raise CorruptRecordError(f"{where}: {total} postings, the header says {head.postings}")
    return Snapshot(head.rows, head.fingerprint, doc_len, segments, bounds)


def _array(txn: Txn, key: bytes, stored: str, native: object, where: str) -> np.ndarray:
    raw = txn.get(DB, key)
    if raw is None:
        raise CorruptRecordError(f"{where}: value {key.decode()} is missing")
    size = np.dtype(stored).itemsize
    if len(raw) % size:
        raise CorruptRecordError(f"{where}: value {key.decode()} is not whole {stored} items")
    # One copy out of the map (or of py-lmdb's bytes) into a writable array.
    out = np.empty(len(raw) // size, dtype=native)  # type: ignore[call-overload]
    out[:] = np.frombuffer(raw, dtype=stored)
    return out


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
