"""Ingested files: what each file held when it was last ingested, so ingest is idempotent.

``files`` maps a 16-byte BLAKE2b digest of a file's source (its resolved path,
as stored on its traces) to a :class:`FileRecord`: size, mtime, a digest of its
bytes, and the ids of the traces that hold its chunks (new traces, or traces
that already held the same text). Ingesting an unchanged file (same bytes)
reads it but stores nothing; a changed file's new chunks are stored and its old
traces that no longer hold any of its chunks are retired, in the same
transaction that writes its new record. Functions over a
:class:`~sentient_core.store.txn.Txn`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import msgspec

from sentient_core.store.records import RecordCodec

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["CODEC", "DB", "FileRecord", "get", "iter_records", "put", "source_key"]

DB = "files"

NonNeg = Annotated[int, msgspec.Meta(ge=0)]


class FileRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One ingested file, as of its last ingest.

    ``digest`` is the BLAKE2b-128 hex digest of the file's bytes; ``trace_ids``
    the traces holding its chunks, in chunk order (a repeated chunk once).
    """

    v: int = 1
    source: str
    size: NonNeg
    mtime_ns: NonNeg
    digest: Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{32}$")]
    trace_ids: tuple[NonNeg, ...]
    ingested_at: float


CODEC = RecordCodec(FileRecord, 1, "file record")


def source_key(source: str) -> bytes:
    """The key of a file's record (its source text, hashed)."""
    return hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def get(txn: Txn, source: str) -> FileRecord | None:
    """The record of ``source``, or None (also for an older store without ``files``)."""
    if not txn.store.has_db(DB):
        return None
    raw = txn.get(DB, source_key(source))
    if raw is None:
        return None
    return CODEC.decode(bytes(raw), where=f"{txn.store.path} files/{source}")


def put(txn: Txn, record: FileRecord) -> None:
    """Write (or replace) the record of ``record.source``."""
    txn.put(DB, source_key(record.source), CODEC.encode(record))


def iter_records(txn: Txn) -> Iterator[FileRecord]:
    """Every file record (key order; copied out of the transaction)."""
    if not txn.store.has_db(DB):
        return
    cur = txn.cursor(DB)
    for _, value in cur:
        yield CODEC.decode(bytes(value), where=f"{txn.store.path} files")
