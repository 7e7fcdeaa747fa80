"""The mirror's columns of every trace as raw little-endian blocks: a load without decoding.

Loading the memory mirror needs, per trace, its id, times, strength, importance,
retired flag, SMF orientation and dominant primes. Decoding them out of each msgpack
trace record costs a decode call per trace (~2.4 µs: 2.4 s at a million traces). This
sub-database (``columns``) keeps those fields as fixed-width rows of :data:`DTYPE`,
:data:`BLOCK` rows per value keyed by ``u64(row // BLOCK)``, written in the same
transaction as the trace records (:func:`put_records`, called by
:func:`sentient_core.store.traces.append` and :func:`~sentient_core.store.traces.update`);
a load joins the values and reads them with one ``np.frombuffer`` (:func:`load`).

Primes: up to :data:`SLOT` per row in place; a trace with more is marked ``wide`` and
its primes are read from its record (never the case for the encoders' 8 dominant
primes). A store written before this sub-database existed has no :data:`MARK` in
``meta``: the first writable open of its memory fills the blocks from the records once
(:func:`backfill`); until then, and for a read-only open, the mirror decodes the records
as before. ``check`` compares the blocks with the records (:func:`problems`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from sentient_core.store.columns import TraceColumns
from sentient_core.store.errors import CorruptRecordError, StoreError
from sentient_core.store.records import SMF_AXES, TRACES, key_u64, u64_key

if TYPE_CHECKING:
    from sentient_core.store.records import TraceRecord
    from sentient_core.store.txn import Txn

__all__ = ["BLOCK", "DB", "DTYPE", "MARK", "backfill", "enabled", "load", "problems", "put_records"]

DB = "columns"
MARK = b"columns"
"""Key in ``meta`` whose presence says every trace's row is in the blocks."""
BLOCK = 64
"""Rows per stored value: an update rewrites one block (64 × 184 bytes)."""
SLOT = 8
"""Primes kept in place per row (the encoders keep 8 dominant primes)."""

DTYPE = np.dtype(
    [
        ("id", "<i8"),
        ("created", "<f8"),
        ("last_access", "<f8"),
        ("strength", "<f8"),
        ("importance", "<f8"),
        ("retired", "u1"),
        ("nprimes", "u1"),
        ("wide", "u1"),
        ("pad", "u1", (5,)),
        ("primes", "<u2", (SLOT,)),
        ("smf", "<f8", (SMF_AXES,)),
    ]
)
"""One row of the mirror's columns (184 bytes, little-endian)."""


def enabled(txn: Txn) -> bool:
    """Whether this store keeps the blocks (and so every trace has its row in them)."""
    return txn.store.has_db(DB) and txn.get("meta", MARK) is not None


_NO_PAD = (0,) * 5


def _fill(block: np.ndarray, at: int, rec: TraceRecord) -> None:
    primes = tuple(rec.primes)
    wide = len(primes) > SLOT
    slot = (0,) * SLOT if wide else primes + (0,) * (SLOT - len(primes))
    # One structured assignment (a tuple in DTYPE's field order), not one per field.
    block[at] = (
        rec.id,
        rec.created,
        rec.last_access,
        rec.strength,
        rec.importance,
        rec.retired,
        0 if wide else len(primes),
        wide,
        _NO_PAD,
        slot,
        rec.smf,
    )


def _empty(rows: int) -> np.ndarray:
    block = np.zeros(rows, dtype=DTYPE)
    block["id"] = -1
    return block


def _write(txn: Txn, recs: Sequence[TraceRecord]) -> None:
    db = txn.db(DB)
    by_block: dict[int, list[TraceRecord]] = {}
    for rec in recs:
        by_block.setdefault(rec.row // BLOCK, []).append(rec)
    for b, group in by_block.items():
        key = u64_key(b)
        raw = txn.raw.get(key, db=db)
        block = np.frombuffer(bytes(raw), dtype=DTYPE).copy() if raw is not None else _empty(0)
        size = max(r.row for r in group) - b * BLOCK + 1
        if block.size < size:
            grown = _empty(size)
            grown[: block.size] = block
            block = grown
        for rec in group:
            _fill(block, rec.row - b * BLOCK, rec)
        txn.raw.put(key, block.tobytes(), db=db)


def put_records(txn: Txn, recs: Sequence[TraceRecord]) -> None:
    """Write the rows of ``recs`` (stored or updated trace records) in ``txn``; nothing
    for a store that does not keep the blocks yet."""
    if recs and enabled(txn):
        _write(txn, recs)


def backfill(txn: Txn, records: Iterator[TraceRecord]) -> int:
    """Fill the blocks from ``records`` (every trace record of the store, the caller's
    :func:`~sentient_core.store.traces.iter_range`) and set :data:`MARK`; returns the rows
    written."""
    txn.raw.drop(txn.db(DB), delete=False)
    n = 0
    batch: list[TraceRecord] = []
    for rec in records:
        batch.append(rec)
        if len(batch) == 4096:
            _write(txn, batch)
            n += len(batch)
            batch = []
    if batch:
        _write(txn, batch)
        n += len(batch)
    txn.put("meta", MARK, b"\x01")
    return n


def _blocks(txn: Txn) -> np.ndarray:
    values = txn.cursor(DB).iternext(keys=False)
    return np.frombuffer(b"".join(values), dtype=DTYPE)


def load(txn: Txn, n_rows: int) -> TraceColumns | None:
    """The columns of rows ``0 … n_rows − 1`` from the blocks, or None when the store does
    not keep them (see the module docstring)."""
    if not enabled(txn):
        return None
    arr = _blocks(txn)
    where = f"{txn.store.path} columns"
    if arr.size < n_rows or (n_rows and int(arr["id"][:n_rows].min()) < 0):
        raise CorruptRecordError(f"{where}: rows missing for stored traces; run check_integrity")
    arr = arr[:n_rows]
    counts = arr["nprimes"].astype(np.int64)
    flat = arr["primes"][np.arange(SLOT) < counts[:, None]].astype(np.int64)
    wide = np.flatnonzero(arr["wide"])
    if wide.size:
        counts, flat = _with_wide(txn, arr, counts, wide, where)
    # Views of the joined blocks where the stored type is the column's (the mirror
    # copies them into its own arrays).
    return TraceColumns.of_arrays(
        ids=arr["id"].astype(np.int64, copy=False),
        rows=np.arange(n_rows, dtype=np.int64),
        created=arr["created"].astype(np.float64, copy=False),
        last_access=arr["last_access"].astype(np.float64, copy=False),
        strength=arr["strength"].astype(np.float64, copy=False),
        importance=arr["importance"].astype(np.float64, copy=False),
        retired=arr["retired"].view(np.bool_),
        smf=arr["smf"].astype(np.float64, copy=False),
        prime_counts=counts,
        primes=flat,
    )


def _with_wide(
    txn: Txn, arr: np.ndarray, counts: np.ndarray, wide: np.ndarray, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """Prime counts and primes with the wide rows' primes read from their records."""
    per_row = [arr["primes"][i, : counts[i]].astype(np.int64) for i in range(arr.size)]
    counts = counts.copy()
    for i in wide.tolist():
        raw = txn.get("traces", u64_key(int(arr["id"][i])))
        rec = None if raw is None else TRACES.decode(raw, where=where)
        if rec is None:
            raise CorruptRecordError(f"{where}: row {i} names a missing trace")
        per_row[i] = np.asarray(rec.primes, dtype=np.int64)
        counts[i] = len(rec.primes)
    return counts, np.concatenate(per_row) if per_row else np.zeros(0, np.int64)


def problems(txn: Txn) -> Iterator[str]:
    """Rows of the blocks that disagree with the trace records (for ``check``)."""
    if not enabled(txn):
        return
    arr = _blocks(txn)
    seen = 0
    cur = txn.cursor("traces")
    for key, value in cur.iternext():
        seen += 1
        try:
            rec = TRACES.decode(value, where="traces")
        except (StoreError, msgspec.ValidationError, msgspec.DecodeError):
            continue  # an unreadable record is the trace check's to report
        if rec.row >= arr.size:
            yield f"columns: no row {rec.row} for trace {key_u64(bytes(key))}"
            continue
        want = _empty(1)
        _fill(want, 0, rec)
        if arr[rec.row].tobytes() != want[0].tobytes():
            yield f"columns: row {rec.row} disagrees with trace {rec.id}"
    stored = int((arr["id"] >= 0).sum())
    if stored != seen:
        yield f"columns: {stored} rows for {seen} traces"
