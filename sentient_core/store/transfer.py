"""Export a store as JSON lines, and import such an export into a new store.

The export carries everything needed to rebuild what the store knows: a header
line, every trace (retired ones too, so ids stay the same) with its code row,
every link, and the meta-memory records of :data:`CARRIED` (the question book,
focus goals, memory and observer state, budget, and the scorer, surprise, debt,
wisdom, source and recipe records) as raw record bytes. One JSON object per line,
tagged by ``kind``::

    {"kind": "header", "format": "sentient-core-export", "version": 1, "code_dim": 256, …}
    {"kind": "trace", "record": {…TraceRecord…}, "code": [0.01, …]}
    {"kind": "link", "link": {…LinkRecord…}}
    {"kind": "record", "db": "state", "key": "<hex>", "value": "<base64>"}

Code rows are written as JSON numbers that round-trip float32 exactly, so an
imported store recalls exactly as the exported one. The audit log travels only
when asked (``events=True``): it can be large and is history, not knowledge.
Content digests are rebuilt by the import (they follow from the traces).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Iterator
from typing import Literal

import msgspec
import numpy as np

from sentient_core.store import codes, links, traces
from sentient_core.store.env import Store
from sentient_core.store.errors import CorruptRecordError, StoreUsageError
from sentient_core.store.records import LinkRecord, TraceRecord, primes_hook

__all__ = ["CARRIED", "TransferCounts", "export_lines", "import_lines"]

FORMAT = "sentient-core-export"
VERSION = 1
CARRIED: tuple[str, ...] = (
    "state",
    "scorer",
    "surprise",
    "debts",
    "wisdom",
    "sources",
    "budget",
    "files",
    "layers",
    "recipes",
)
"""Sub-databases exported record by record (besides traces, codes and links)."""

_BATCH = 10_000


class _Header(msgspec.Struct, tag="header", tag_field="kind", forbid_unknown_fields=True):
    format: str
    version: int
    code_dim: int
    exported_at: float
    traces: int
    events: bool = False


class _Trace(msgspec.Struct, tag="trace", tag_field="kind", forbid_unknown_fields=True):
    record: TraceRecord
    code: list[float]


class _Link(msgspec.Struct, tag="link", tag_field="kind", forbid_unknown_fields=True):
    link: LinkRecord


class _Record(msgspec.Struct, tag="record", tag_field="kind", forbid_unknown_fields=True):
    db: str
    key: str
    value: str


_Line = _Header | _Trace | _Link | _Record
_ENC = msgspec.json.Encoder()
_DEC = msgspec.json.Decoder(_Line, dec_hook=primes_hook)


class TransferCounts(msgspec.Struct, forbid_unknown_fields=True):
    """What an export or import carried."""

    traces: int = 0
    links: int = 0
    records: int = 0
    kind: Literal["export", "import"] = "export"


def export_lines(
    store: Store, *, events: bool = False, counts: TransferCounts | None = None
) -> Iterator[bytes]:
    """The export of ``store`` as JSON lines (bytes without the newline), from one snapshot."""
    counts = counts if counts is not None else TransferCounts()
    with store.read() as txn:
        n = txn.counters().trace_count
        yield _ENC.encode(
            _Header(
                format=FORMAT,
                version=VERSION,
                code_dim=store.code_dim,
                exported_at=time.time(),
                traces=n,
                events=events,
            )
        )
        start = 0
        while start < n:
            recs = list(traces.iter_range(txn, start, start + _BATCH))
            if not recs:
                break
            rows = codes.read_rows(txn, recs[0].row, recs[-1].row + 1)
            for rec in recs:
                row = rows[rec.row - recs[0].row]
                yield _ENC.encode(_Trace(record=rec, code=row.astype(np.float64).tolist()))
                counts.traces += 1
            start = recs[-1].id + 1
        for link in links.iter_from(txn):
            yield _ENC.encode(_Link(link=link))
            counts.links += 1
        names = CARRIED + (("events",) if events else ())
        for name in names:
            if not txn.store.has_db(name):
                continue
            for key, value in txn.cursor(name).iternext():
                yield _ENC.encode(
                    _Record(
                        db=name,
                        key=bytes(key).hex(),
                        value=base64.b64encode(bytes(value)).decode("ascii"),
                    )
                )
                counts.records += 1


def import_lines(store: Store, lines: Iterable[bytes | str]) -> TransferCounts:
    """Import an export into ``store``, which must hold no traces yet.

    Traces keep their ids (the export lists them all, in id order), codes are
    restored bit for bit, links and records as they were. Every batch is one
    write transaction.

    Raises
    ------
    StoreUsageError
        The store already holds traces, or the export has another code dimension.
    CorruptRecordError
        A line does not decode, the header is missing or of another format, or
        the traces are not contiguous from id 0.
    """
    with store.read() as txn:
        if txn.counters().trace_count:
            raise StoreUsageError(
                f"the store at {store.path} already holds traces; import into a new one"
            )
    counts = TransferCounts(kind="import")
    header: _Header | None = None
    batch_recs: list[TraceRecord] = []
    batch_codes: list[list[float]] = []
    others: list[_Link | _Record] = []

    def flush_traces() -> None:
        if not batch_recs:
            return
        rows = np.asarray(batch_codes, dtype=np.float32).reshape(len(batch_recs), store.code_dim)
        want = [r.id for r in batch_recs]
        stored = store.write(lambda txn: traces.append(txn, batch_recs, rows))
        if [r.id for r in stored] != want:
            raise CorruptRecordError(
                f"exported trace ids are not contiguous from 0 (expected {want[0]}…,"
                f" stored as {stored[0].id}…)"
            )
        counts.traces += len(stored)
        batch_recs.clear()
        batch_codes.clear()

    def flush_others() -> None:
        if not others:
            return

        def write(txn) -> None:
            for item in others:
                if isinstance(item, _Link):
                    links.put(txn, item.link)
                else:
                    txn.put(item.db, bytes.fromhex(item.key), base64.b64decode(item.value))

        store.write(write)
        counts.links += sum(isinstance(i, _Link) for i in others)
        counts.records += sum(isinstance(i, _Record) for i in others)
        others.clear()

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = _DEC.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise CorruptRecordError(f"export line {number} does not decode: {exc}") from None
        if header is None:
            if not isinstance(item, _Header) or item.format != FORMAT:
                raise CorruptRecordError("the export does not start with a sentient-core header")
            if item.version > VERSION:
                raise CorruptRecordError(
                    f"the export has format version {item.version}; this sentient-core reads"
                    f" up to {VERSION}"
                )
            if item.code_dim != store.code_dim:
                raise StoreUsageError(
                    f"the export has {item.code_dim}-dim codes; the store at {store.path}"
                    f" holds {store.code_dim}-dim codes"
                )
            header = item
        elif isinstance(item, _Trace):
            batch_recs.append(item.record)
            batch_codes.append(item.code)
            if len(batch_recs) >= _BATCH:
                flush_traces()
        elif isinstance(item, (_Link, _Record)):
            flush_traces()  # links need their traces
            others.append(item)
            if len(others) >= _BATCH:
                flush_others()
        else:
            raise CorruptRecordError(f"export line {number}: a second header")
    if header is None:
        raise CorruptRecordError("the export is empty")
    flush_traces()
    flush_others()
    return counts
