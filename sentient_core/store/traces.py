"""Trace records: functions over a :class:`~sentient_core.store.env.Txn`.

Traces live in the ``traces`` sub-database under 8-byte big-endian ids,
msgspec-encoded (:data:`~sentient_core.store.records.TRACES`). Each owns one
code row (:mod:`sentient_core.store.codes`) and, if it is the first to hold its
text, that text's content digest (:mod:`sentient_core.store.content`);
:func:`append` adds all of them in the caller's transaction and updates the
store counters, so a batch commits together or not at all.

A store from before trace records had version 2 (primes as uint16 bytes, see
:mod:`~sentient_core.store.records`) reads as it is; :func:`upgrade` rewrites
its older records once (:func:`needs_upgrade` says whether to).

Like :mod:`~sentient_core.store.codes` and :mod:`~sentient_core.store.links`,
every function takes the transaction first; reading functions work in read
and write transactions, writing ones need a write transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from sentient_core.errors import NotFoundError
from sentient_core.store import codes, colblocks, content
from sentient_core.store.errors import CorruptRecordError, StoreUsageError
from sentient_core.store.records import TRACES, Counters, TraceRecord, key_u64, u64_key
from sentient_core.store.txn import TRACE_VERSION_KEY

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "append",
    "backfill_columns",
    "backfill_digests",
    "count",
    "get",
    "get_many",
    "iter_range",
    "needs_upgrade",
    "update",
    "upgrade",
]

DB = "traces"
_UPGRADE_BATCH = 10_000


def append(
    txn: Txn,
    records: Sequence[TraceRecord],
    rows: np.ndarray,
    *,
    digests: Sequence[bytes] | None = None,
    checked: bool = False,
) -> list[TraceRecord]:
    """Add traces and their code rows, and update the counters.

    Ids and rows are assigned here (``next_id + i`` and ``row_count + i``);
    the ``id``/``row`` of the given records are ignored.

    Parameters
    ----------
    txn : Txn
        A write transaction.
    records : sequence of TraceRecord
    rows : ndarray, shape (len(records), code_dim), float32
        One code row per record.
    digests : sequence of bytes, optional
        Their content digests (:func:`content.digest`), when the caller has them.
    checked : bool
        The caller checked every field against the record's bounds (ids and
        rows aside): encode without decoding each record back to validate it.

    Returns
    -------
    list of TraceRecord
        The stored records, with their ids and rows.
    """
    if digests is not None and len(digests) != len(records):
        raise StoreUsageError(f"{len(digests)} digests for {len(records)} records")
    if len(records) != (rows.shape[0] if getattr(rows, "ndim", 0) == 2 else -1):
        raise StoreUsageError(
            f"traces.append needs one code row per record: {len(records)} records,"
            f" rows of shape {getattr(rows, 'shape', None)}"
        )
    before = txn.counters()
    first_row = codes.append_rows(txn, rows)
    db = txn.db(DB)
    put = txn.raw.put
    replace = msgspec.structs.replace
    stored = []
    next_id = before.next_id
    for i, record in enumerate(records):
        rec = replace(record, id=next_id + i, row=first_row + i)
        if not put(u64_key(rec.id), TRACES.encode(rec, validate=not checked), db=db, append=True):
            raise CorruptRecordError(
                f"trace id {rec.id} is not above the ids already in the store at"
                f" {txn.store.path}; the counters are stale (run check_integrity)"
            )
        # The first active holder of a content keeps it (see sentient_core.store.content).
        if not rec.retired:
            key = digests[i] if digests is not None else content.digest(rec.text)
            content.put(txn, key, rec.id)
        stored.append(rec)
    colblocks.put_records(txn, stored)
    n = len(stored)
    txn.set_counters(
        Counters(next_id=next_id + n, trace_count=before.trace_count + n, row_count=first_row + n)
    )
    return stored


def update(txn: Txn, record: TraceRecord) -> None:
    """Replace an existing trace record (same id, same row).

    Raises
    ------
    NotFoundError
        No trace with that id (also a ``KeyError``).
    StoreUsageError
        The record's row differs from the stored one.
    """
    old = get(txn, record.id)
    if old is None:
        raise NotFoundError(f"no trace {record.id} in the store at {txn.store.path}")
    if old.row != record.row:
        raise StoreUsageError(
            f"trace {record.id} owns code row {old.row}; an update cannot move it to {record.row}"
        )
    txn.raw.put(u64_key(record.id), TRACES.encode(record), db=txn.db(DB))
    colblocks.put_records(txn, [record])


def get(txn: Txn, trace_id: int) -> TraceRecord | None:
    """The trace with id ``trace_id``, or None."""
    raw = txn.raw.get(u64_key(trace_id), db=txn.db(DB))
    if raw is None:
        return None
    return TRACES.decode(raw, where=f"traces/{trace_id}")


def get_many(txn: Txn, trace_ids: Sequence[int]) -> list[TraceRecord | None]:
    """The traces with these ids (None for an id not stored), in order."""
    raw_get, db, decode = txn.raw.get, txn.db(DB), TRACES.decode
    out: list[TraceRecord | None] = []
    for trace_id in trace_ids:
        raw = raw_get(u64_key(trace_id), db=db)
        out.append(None if raw is None else decode(raw, where=f"traces/{trace_id}"))
    return out


def exists(txn: Txn, trace_id: int) -> bool:
    """Whether a trace with id ``trace_id`` is stored (retired ones too), without decoding it."""
    return txn.raw.get(u64_key(trace_id), db=txn.db(DB)) is not None


def iter_range(txn: Txn, start: int = 0, stop: int | None = None) -> Iterator[TraceRecord]:
    """Traces with ``start <= id < stop`` in id order."""
    cursor = txn.raw.cursor(db=txn.db(DB))
    if not cursor.set_range(u64_key(start)):
        return
    decode = TRACES.decode
    for key, value in cursor.iternext():
        trace_id = key_u64(key)
        if stop is not None and trace_id >= stop:
            return
        yield decode(value, where=f"traces/{trace_id}")


def count(txn: Txn) -> int:
    """Number of trace records (from the counters)."""
    return txn.counters().trace_count


def backfill_columns(txn: Txn) -> int:
    """Fill the mirror's column blocks from every trace record (a store written before
    them, :mod:`sentient_core.store.colblocks`); returns the rows written."""
    return colblocks.backfill(txn, iter_range(txn))


def backfill_digests(txn: Txn) -> int:
    """Add the content digest of every active trace that has none; returns how many.

    For stores written before content digests existed (one pass over the traces,
    in the caller's write transaction).
    """
    added = 0
    for rec in iter_range(txn):
        if not rec.retired and content.put(txn, content.digest(rec.text), rec.id):
            added += 1
    return added


def needs_upgrade(txn: Txn) -> bool:
    """Whether the store has traces and was not yet upgraded to the current trace
    record version (it may hold older records; see :func:`upgrade`)."""
    raw = txn.get("meta", TRACE_VERSION_KEY)
    done = 1 if raw is None else key_u64(raw)
    return done < TRACES.version and txn.counters().trace_count > 0


def upgrade(txn: Txn) -> int:
    """Rewrite every trace record of an older version as the current version, then
    mark the store upgraded; returns how many were rewritten.

    For a store written before trace records had version 2 (one pass over the
    traces, in the caller's write transaction; only their encoding changes).

    Raises
    ------
    CorruptRecordError
        A record does not decode, or has a prime above
        :data:`~sentient_core.store.records.MAX_PRIME` (no version 2 form).
    """
    db = txn.db(DB)
    rewritten = 0
    start, stop = 0, txn.counters().next_id
    while start < stop:
        batch = list(iter_range(txn, start, start + _UPGRADE_BATCH))  # read, then write
        for rec in batch:
            if rec.v != TRACES.version:
                txn.raw.put(u64_key(rec.id), TRACES.encode(rec), db=db)
                rewritten += 1
        start += _UPGRADE_BATCH
    txn.put("meta", TRACE_VERSION_KEY, u64_key(TRACES.version))
    return rewritten
