"""Whole-store consistency check.

:func:`check_integrity` reads one snapshot and verifies that

* the header and counters decode,
* every trace record decodes, sits under its own id, and owns a code row that
  exists; every code row is owned by exactly one trace,
* the code blocks are contiguous, full except the last, and finite,
* the counters agree with what is stored (trace count, row count, next id),
* every link decodes, sits under its own key, and joins existing traces,
* every content digest names an existing active trace whose text has that digest,
* every file record decodes, sits under its source's key, and names existing traces.
* every stored term list decodes and belongs to an existing trace (a trace
  without terms is allowed: a store from before terms gets them on its first
  writable open).
* the persisted lexical index, if any, is the index of the stored terms of the
  rows it covers (:mod:`sentient_core.store.lexicon_check`).
* every record of every registered record table (:mod:`sentient_core.store.table`:
  the meta-memory's surprise events, credit and floor records, scorer snapshots,
  debts, wisdom, source weights and windows) decodes under its own key, the
  traces it names exist, and its owner's checks pass (the scorer snapshots chain
  from version 1, wisdom cites existing debts).

It never raises for a problem it finds; it lists them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
import numpy as np

from sentient_core.store import (
    codes,
    codes_q8,
    colblocks,
    colfile,
    files,
    prime_snapshot,
    table,
)
from sentient_core.store.content import digest
from sentient_core.store.errors import StoreError
from sentient_core.store.records import (
    LINKS,
    TRACES,
    key_u64,
    split_link_key,
    u64_key,
)

if TYPE_CHECKING:
    from sentient_core.store.env import Store
from sentient_core.store.txn import Txn

__all__ = ["IntegrityReport", "check_integrity"]

MAX_LISTED = 50
"""Problems listed in full; beyond this only a count is added."""

TABLE_DBS: tuple[str, ...] = (
    "scorer",
    "surprise",
    "debts",
    "wisdom",
    "sources",
    "layers",
    "recipes",
)
"""Sub-databases whose records are read only through the tables the meta-memory
registers: one holding records while no table of it is registered is a problem
(the check would otherwise pass without having read them)."""


class IntegrityReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Result of :func:`check_integrity`.

    Attributes
    ----------
    ok : bool
        No problem found.
    problems : tuple of str
        One line per problem (at most :data:`MAX_LISTED`, then a summary line).
    traces, rows, links : int
        What the snapshot actually holds.
    """

    ok: bool
    problems: tuple[str, ...]
    traces: int
    rows: int
    links: int


class _Problems:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.extra = 0

    def add_once(self, line: str) -> None:
        if line not in self.lines:
            self.add(line)

    def add(self, line: str) -> None:
        if len(self.lines) < MAX_LISTED:
            self.lines.append(line)
        else:
            self.extra += 1

    def result(self) -> tuple[str, ...]:
        if self.extra:
            return (*self.lines, f"... and {self.extra} more problem(s)")
        return tuple(self.lines)


def check_integrity(store: Store) -> IntegrityReport:
    """Check the consistency of ``store`` (see the module docstring).

    Parameters
    ----------
    store : Store
        An open store (read-only is fine).

    Returns
    -------
    IntegrityReport
    """
    problems = _Problems()
    with store.read() as txn:
        try:
            counters = txn.counters()
        except StoreError as exc:
            problems.add(f"counters: {exc}")
            counters = None
        rows = _check_codes(txn, problems)
        owners = np.zeros(rows, dtype=np.int64)
        ids, max_id = _check_traces(txn, owners, problems)
        unowned = np.flatnonzero(owners == 0)
        if unowned.size:
            problems.add(
                f"{unowned.size} code row(s) belong to no trace (first: {unowned[:5].tolist()})"
            )
        shared = np.flatnonzero(owners > 1)
        if shared.size:
            problems.add(
                f"{shared.size} code row(s) belong to several traces (first: {shared[:5].tolist()})"
            )
        links = _check_links(txn, ids, problems)
        _check_content(txn, problems)
        _check_files(txn, ids, problems)
        _check_terms(txn, ids, problems)
        for problem in colblocks.problems(txn):  # the mirror's raw columns agree
            problems.add(problem)
        from sentient_core.store import lexicon_check  # reads the kernels; only needed here

        for problem in lexicon_check.problems(txn):  # the persisted lexical index
            problems.add(problem)
        # The derived files: the prime index's snapshot, the codes' int8 copy.
        for problem in prime_snapshot.problems(store.path, store.meta.created, txn):
            problems.add(problem)
        for problem in colfile.problems(txn, store.path, store.meta.created):
            problems.add(problem)
        for problem in codes_q8.problems(txn):
            problems.add(problem)
        _check_tables(txn, ids, problems)
        if counters is not None:
            if counters.trace_count != len(ids):
                problems.add(f"counters say {counters.trace_count} traces; {len(ids)} stored")
            if counters.row_count != rows:
                problems.add(f"counters say {counters.row_count} code rows; {rows} stored")
            if counters.next_id <= max_id:
                problems.add(f"counters say next id {counters.next_id} but trace {max_id} exists")
    lines = problems.result()
    return IntegrityReport(ok=not lines, problems=lines, traces=len(ids), rows=rows, links=links)


def _check_codes(txn: Txn, problems: _Problems) -> int:
    """Validate the code rows' layout; return the number of rows actually stored."""
    store = txn.store
    if codes.code_file(txn) is not None:
        return _check_code_file(txn, problems)
    dim, per_block = store.code_dim, store.block_rows
    row_bytes = 4 * dim
    expected_block = 0
    rows = 0
    last_partial = None
    cursor = txn.raw.cursor(db=store.db("codes"))
    for key, value in cursor.iternext():
        if len(key) != 8:
            problems.add(f"codes: key of {len(key)} bytes (expected 8)")
            continue
        block = key_u64(key)
        if block != expected_block:
            problems.add(f"codes: block {expected_block} missing (next is {block})")
        if last_partial is not None:
            problems.add(f"codes: block {last_partial} is partial but not the last block")
        size = len(value)
        if size == 0 or size % row_bytes or size > per_block * row_bytes:
            problems.add(f"codes: block {block} has {size} bytes (rows are {row_bytes} bytes)")
            expected_block = block + 1
            continue
        n = size // row_bytes
        if n < per_block:
            last_partial = block
        if not np.isfinite(np.frombuffer(value, dtype=np.float32)).all():
            problems.add(f"codes: block {block} contains non-finite values")
        rows = block * per_block + n
        expected_block = block + 1
    return rows


def _check_code_file(txn: Txn, problems: _Problems) -> int:
    """Schema 2: the file holds the counted rows, all finite; no code blocks remain."""
    store = txn.store
    code_file = store.code_file
    assert code_file is not None
    try:
        counted = txn.counters().row_count
    except StoreError:
        counted = 0
    have = code_file.stored_rows() if code_file.path.exists() else 0
    if have < counted:
        problems.add(f"codes: {code_file.path.name} holds {have} rows; the counters say {counted}")
    rows = min(have, counted)
    mapped = code_file.rows(rows)
    step = max(1, (16 << 20) // code_file.row_bytes)
    for start in range(0, rows, step):
        part = mapped[start : start + step]
        if not np.isfinite(part).all():
            bad = start + int(np.flatnonzero(~np.isfinite(part).all(axis=1))[0])
            problems.add(f"codes: row {bad} of {code_file.path.name} is not finite")
            break
    with txn.raw.cursor(db=store.db("codes")) as cursor:
        if cursor.first():
            problems.add("codes: the store keeps its rows in a file but code blocks remain")
    return rows


def _check_traces(txn: Txn, owners: np.ndarray, problems: _Problems) -> tuple[set[int], int]:
    """Decode every trace and count row ownership; return the ids and the max id."""
    store = txn.store
    ids: set[int] = set()
    max_id = -1
    rows = owners.shape[0]
    cursor = txn.raw.cursor(db=store.db("traces"))
    for key, value in cursor.iternext():
        if len(key) != 8:
            problems.add(f"traces: key of {len(key)} bytes (expected 8)")
            continue
        key_id = key_u64(key)
        ids.add(key_id)
        max_id = max(max_id, key_id)
        try:
            record = TRACES.decode(value, where=f"traces/{key_id}")
        except StoreError as exc:
            problems.add(str(exc))
            continue
        if record.id != key_id:
            problems.add(f"traces: record under key {key_id} says id {record.id}")
        if record.row >= rows:
            problems.add(f"trace {key_id}: code row {record.row} does not exist ({rows} rows)")
        else:
            owners[record.row] += 1
    return ids, max_id


def _check_links(txn: Txn, ids: set[int], problems: _Problems) -> int:
    count = 0
    cursor = txn.raw.cursor(db=txn.store.db("links"))
    for key, value in cursor.iternext():
        count += 1
        if len(key) != 16:
            problems.add(f"links: key of {len(key)} bytes (expected 16)")
            continue
        src, dst = split_link_key(key)
        try:
            link = LINKS.decode(value, where=f"links/{src}->{dst}")
        except StoreError as exc:
            problems.add(str(exc))
            continue
        if (link.src, link.dst) != (src, dst):
            problems.add(f"links: record under {src}->{dst} says {link.src}->{link.dst}")
        for end in (src, dst):
            if end not in ids:
                problems.add(f"link {src}->{dst} points at missing trace {end}")
    return count


def _check_content(txn: Txn, problems: _Problems) -> None:
    if not txn.store.has_db("content"):
        return  # an older store opened read-only: no digests yet
    cursor = txn.raw.cursor(db=txn.store.db("content"))
    for key, value in cursor.iternext():
        if len(value) != 8:
            problems.add(f"content: value of {len(value)} bytes (expected a trace id)")
            continue
        trace_id = key_u64(value)
        raw = txn.raw.get(u64_key(trace_id), db=txn.store.db("traces"))
        if raw is None:
            problems.add(f"content digest {bytes(key).hex()[:12]}… names missing trace {trace_id}")
            continue
        try:
            record = TRACES.decode(raw, where=f"traces/{trace_id}")
        except StoreError:
            continue  # already listed by the trace check
        if record.retired:
            problems.add(f"content digest {bytes(key).hex()[:12]}… names retired trace {trace_id}")
        elif digest(record.text) != bytes(key):
            problems.add(f"content digest {bytes(key).hex()[:12]}… does not match trace {trace_id}")


def _check_files(txn: Txn, ids: set[int], problems: _Problems) -> None:
    if not txn.store.has_db(files.DB):
        return
    for key, value in txn.raw.cursor(db=txn.store.db(files.DB)).iternext():
        try:
            rec = files.CODEC.decode(bytes(value), where=f"files/{bytes(key).hex()[:12]}")
        except StoreError as exc:
            problems.add(str(exc))
            continue
        if files.source_key(rec.source) != bytes(key):
            problems.add(f"file record of {rec.source!r} is not under its source's key")
        missing = [i for i in rec.trace_ids if i not in ids]
        if missing:
            problems.add(f"file record of {rec.source!r} names missing trace(s) {missing[:5]}")


def _check_terms(txn: Txn, ids: set[int], problems: _Problems) -> None:
    from sentient_core.store import terms  # imports the encoder; only needed here

    if not txn.store.has_db(terms.DB):
        return  # an older store opened read-only: no terms yet
    try:
        for term_ids, _ in terms.iter_chunks(txn):
            for tid in term_ids.tolist():
                if tid not in ids:
                    problems.add(f"terms: the terms of trace {tid} belong to no stored trace")
    except StoreError as exc:
        problems.add(str(exc))


def _check_tables(txn: Txn, ids: set[int], problems: _Problems) -> None:
    """Every record of every registered table decodes under its own key, the traces
    it names exist, and its owner's checks pass (see :func:`~sentient_core.store.table.register`)."""
    owned: set[str] = set()
    for entry in table.registered():
        owned.add(entry.table.db)
        if not txn.store.has_db(entry.table.db):
            continue
        try:
            for record in entry.table.iter(txn):
                for what, trace in entry.traces(record) if entry.traces else ():
                    if trace >= 0 and trace not in ids:
                        problems.add(f"{what} names missing trace {trace}")
        except StoreError as exc:
            problems.add(str(exc))
            continue  # the owner's checks would trip over the same record
        try:
            for line in entry.check(txn) if entry.check else ():
                problems.add(line)
        except StoreError as exc:  # another table's bad record, listed by its own table
            problems.add_once(str(exc))
    for name in TABLE_DBS:
        if name not in owned and txn.store.has_db(name) and txn.entries(name):
            problems.add(
                f"{name}: {txn.entries(name)} record(s) and no record table registered to read"
                " them (import sentient_core.metamemory, sentient_core.layers and"
                " sentient_core.recipes before checking)"
            )
