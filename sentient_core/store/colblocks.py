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

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from sentient_core.store.columns import CHUNK, ScorerColumns, TraceColumns
from sentient_core.store.columns import scorer_columns as decoded_scorer_columns
from sentient_core.store.errors import CorruptRecordError, StoreError
from sentient_core.store.records import SMF_AXES, TRACES, key_u64, u64_key

if TYPE_CHECKING:
    from sentient_core.store.records import TraceRecord
    from sentient_core.store.txn import Txn

__all__ = [
    "BLOCK",
    "DB",
    "DTYPE",
    "LAYOUT",
    "MARK",
    "SOURCES",
    "backfill",
    "enabled",
    "load",
    "problems",
    "put_records",
    "raw_values",
    "scorer_columns",
    "source_ids",
    "source_names",
]

DB = "columns"
MARK = b"columns"
"""Key in ``meta`` whose value (:data:`LAYOUT`) says every trace's row is in the blocks."""
LAYOUT = b"\x02"
"""The row layout :data:`DTYPE` (1: before the scorer's fields; such blocks are refilled
at the first writable open, as for a store without blocks)."""
SOURCES = "column_sources"
"""Interned trace sources: ``u32`` id → the source (UTF-8), and ``b"s:" + source`` → id.
Ids are assigned once and never reused (the table is never dropped)."""
MAX_COUNT = 2**32 - 1
BLOCK = 64
"""Rows per stored value: an update rewrites one block (64 × 184 bytes)."""
SLOT = 8
"""Primes kept in place per row (the encoders keep 8 dominant primes)."""
DIRTY_DB = "column_dirty"
"""Sub-database of the numbers (u64 keys, empty values) of the blocks written below the
rows of the mirror's column checkpoint since it was taken (:mod:`sentient_core.store.colfile`)."""
CKPT_KEY = b"colckpt"
"""Key in ``meta``: the column checkpoint's token (16 bytes) and rows (u64, little-endian)."""

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
        ("blank", "u1"),
        ("use_count", "<u4"),
        ("success_count", "<u4"),
        ("failure_count", "<u4"),
        ("source", "<u4"),
        ("pad", "u1", (4,)),
        ("primes", "<u2", (SLOT,)),
        ("smf", "<f8", (SMF_AXES,)),
    ]
)
"""One row of the mirror's and the recall scorer's columns (208 bytes, little-endian):
``blank`` (the text is empty or whitespace), the use/success/failure counts (saturated
at :data:`MAX_COUNT`) and ``source`` (an id of :data:`SOURCES`) are the scorer's."""


def enabled(txn: Txn) -> bool:
    """Whether this store keeps the blocks (and so every trace has its row in them)."""
    return txn.store.has_db(DB) and txn.get("meta", MARK) == LAYOUT


def checkpoint_meta(txn: Txn) -> tuple[bytes, int] | None:
    raw = txn.get("meta", CKPT_KEY)
    if raw is None or len(raw) != 24:
        return None
    raw = bytes(raw)
    return raw[:16], int.from_bytes(raw[16:], "little")


def checkpoint_rows(txn: Txn) -> int:
    """Rows the snapshot's checkpoint (``columns.ckpt``, :mod:`~sentient_core.store.colfile`)
    covers (0: none)."""
    meta = checkpoint_meta(txn)
    return 0 if meta is None else meta[1]


def mark_dirty(txn: Txn, rows: Iterable[int]) -> None:
    """Note in ``txn`` that ``rows`` (the lowest row it writes in each column block)
    changed: the blocks of those below the checkpoint's rows are read from LMDB at open,
    not from the file (an append above them marks nothing)."""
    meta = checkpoint_meta(txn)
    if meta is None:
        return
    below = {r // BLOCK for r in rows if r < meta[1]}
    if below:
        db = txn.db(DIRTY_DB)
        for b in sorted(below):
            txn.raw.put(u64_key(b), b"", db=db)


def dirty_blocks(txn: Txn) -> list[int]:
    """The blocks written below the checkpoint since it was taken, ascending."""
    if not txn.store.has_db(DIRTY_DB):
        return []
    return [key_u64(bytes(k)) for k in txn.cursor(DIRTY_DB).iternext(values=False)]


def forget(txn: Txn) -> None:
    """Drop the checkpoint from ``meta`` (the file, if any, is then never used)."""
    txn.raw.delete(CKPT_KEY, db=txn.db("meta"))
    if txn.store.has_db(DIRTY_DB):
        txn.raw.drop(txn.db(DIRTY_DB), delete=False)


_NO_PAD = (0,) * 4


def u32_key(n: int) -> bytes:
    return n.to_bytes(4, "big")


def _count(n: int) -> int:
    return min(max(n, 0), MAX_COUNT)


def source_ids(txn: Txn, sources: Sequence[str]) -> dict[str, int]:
    """The id of each of ``sources`` in :data:`SOURCES`, interning new ones in ``txn``."""
    out: dict[str, int] = {}
    for src in sources:
        if src in out:
            continue
        key = b"s:" + src.encode("utf-8")
        raw = txn.get(SOURCES, key)
        if raw is None:
            sid = txn.entries(SOURCES) // 2
            txn.put(SOURCES, u32_key(sid), src.encode("utf-8"))
            txn.put(SOURCES, key, u32_key(sid))
        else:
            sid = int.from_bytes(bytes(raw), "big")
        out[src] = sid
    return out


def source_names(txn: Txn) -> list[str]:
    """Every interned source, by id (``names[id]``)."""
    if not txn.store.has_db(SOURCES):
        return []
    names = []
    for key, value in txn.cursor(SOURCES).iternext():
        if len(key) == 4:  # u32 id → name (the b"s:" keys sort after them)
            names.append(bytes(value).decode("utf-8"))
    return names


def _fill(block: np.ndarray, at: int, rec: TraceRecord, source: int) -> None:
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
        not rec.text.strip(),
        _count(rec.use_count),
        _count(rec.success_count),
        _count(rec.failure_count),
        source,
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
    ids = source_ids(txn, [r.source for r in recs])
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
            _fill(block, rec.row - b * BLOCK, rec, ids[rec.source])
        txn.raw.put(key, block.tobytes(), db=db)
    mark_dirty(txn, [min(r.row for r in group) for group in by_block.values()])


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
    forget(txn)  # a checkpoint of other blocks
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
    txn.put("meta", MARK, LAYOUT)
    return n


def _blocks(txn: Txn) -> np.ndarray:
    values = txn.cursor(DB).iternext(keys=False)
    return np.frombuffer(b"".join(values), dtype=DTYPE)


def raw_values(txn: Txn) -> Iterator[bytes | memoryview] | None:
    """The stored blocks in row order (:data:`BLOCK` rows of :data:`DTYPE` each, the last
    one possibly fewer), or None when the store does not keep them."""
    if not enabled(txn):
        return None
    return txn.cursor(DB).iternext(keys=False)


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


def scorer_columns(txn: Txn, chunk: int = CHUNK) -> ScorerColumns:
    """The recall scorer's columns of every stored trace (retired ones too), id order.

    From the blocks when the store keeps them (no record decoded: the counts, the
    blank flag and the interned source are in the row), else decoded from the records
    (:func:`sentient_core.store.columns.scorer_columns`, ``chunk`` at a time).
    """
    if not enabled(txn):
        return decoded_scorer_columns(txn, chunk)
    arr = _blocks(txn)
    rows = np.flatnonzero(arr["id"] >= 0)
    if rows.size != arr.size:  # a copy of every row only when some are missing
        arr = arr[rows]
    names = source_names(txn)
    sids = arr["source"].astype(np.int64)
    if sids.size and int(sids.max()) >= len(names):
        raise CorruptRecordError(
            f"{txn.store.path} columns: a row names source {int(sids.max())} of"
            f" {len(names)}; run check_integrity"
        )
    return ScorerColumns.of_arrays(
        names,
        ids=arr["id"].astype(np.int64),
        rows=rows.astype(np.int64),
        last_access=arr["last_access"].astype(np.float64),
        use_count=arr["use_count"].astype(np.int64),
        success_count=arr["success_count"].astype(np.int64),
        failure_count=arr["failure_count"].astype(np.int64),
        strength=arr["strength"].astype(np.float64),
        importance=arr["importance"].astype(np.float64),
        retired=arr["retired"].astype(np.bool_),
        blank=arr["blank"].astype(np.bool_),
        source_ids=sids,
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
    names = {name: i for i, name in enumerate(source_names(txn))}
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
        _fill(want, 0, rec, names.get(rec.source, -1) % (MAX_COUNT + 1))
        if arr[rec.row].tobytes() != want[0].tobytes():
            yield f"columns: row {rec.row} disagrees with trace {rec.id}"
    stored = int((arr["id"] >= 0).sum())
    if stored != seen:
        yield f"columns: {stored} rows for {seen} traces"
