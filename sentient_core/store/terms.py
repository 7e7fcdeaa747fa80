"""Lexical terms of each trace, kept so that opening a store never re-tokenises its texts.

``terms`` maps a trace id (8-byte big-endian, as ``traces``) to the trace's
serialised terms (:func:`sentient_kernels.lexical.pack_terms`: term hashes ascending,
their frequencies, the text's length in tokens). What the terms are, and the
writing of them in the same transaction as their trace, belong to the memory
(:mod:`sentient_core.memory.terms`); this module only stores and reads them.
They never change once written (retired traces keep theirs, like their
records). The tokenisation that made them is stamped in ``state`` under
:data:`STAMP_KEY`. Functions over a :class:`~sentient_core.store.txn.Txn`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING, cast

import numpy as np

from sentient_core.store.errors import CorruptRecordError, StoreUsageError
from sentient_core.store.records import u64_key
from sentient_kernels.lexical import TermCounts, pack_terms, unpack_terms

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "CHUNK",
    "DB",
    "STAMP_KEY",
    "concat",
    "entries",
    "iter_chunks",
    "put",
    "read_from",
    "set_stamp",
    "stamp",
]

DB = "terms"
CHUNK = 65536
"""Trace terms decoded per step (bounds the transient memory of a load)."""

STAMP_KEY = b"terms/tokenizer"
"""Key in ``state`` of the fingerprint of the tokenisation the stored terms come from."""


def stamp(txn: Txn) -> bytes | None:
    """The stored tokenisation fingerprint, or None (no terms written yet)."""
    raw = txn.get("state", STAMP_KEY)
    return None if raw is None else bytes(raw)


def set_stamp(txn: Txn, fingerprint: bytes) -> None:
    txn.put("state", STAMP_KEY, fingerprint)


def entries(txn: Txn) -> int:
    """Number of traces with stored terms (0 for an older store without the sub-database)."""
    return txn.entries(DB) if txn.store.has_db(DB) else 0


def put(txn: Txn, ids: Sequence[int], counts: TermCounts, *, append: bool = False) -> None:
    """Store the terms of traces ``ids`` (``counts`` holds one text per id).

    ``append=True``: the ids ascend and lie above every id stored so far (new
    traces), so LMDB appends at the end of the tree and fills its pages.
    """
    if len(ids) != counts.offsets.shape[0] - 1:
        raise StoreUsageError(
            f"terms.put needs one text of terms per trace id: {len(ids)} ids,"
            f" {counts.offsets.shape[0] - 1} texts"
        )
    if not ids:
        return
    buf, starts = pack_terms(counts)
    raw = buf.tobytes()
    db = txn.db(DB)
    put_raw = txn.raw.put
    bounds = starts.tolist()
    for i, tid in enumerate(ids):
        if not put_raw(u64_key(tid), raw[bounds[i] : bounds[i + 1]], db=db, append=append):
            raise CorruptRecordError(
                f"the terms of trace {tid} are not above those already in the store at"
                f" {txn.store.path}; run check_integrity"
            )


def _decode(
    keys: Sequence[bytes], values: Sequence[bytes], where: str
) -> tuple[np.ndarray, TermCounts]:
    raw_keys = b"".join(keys)
    if len(raw_keys) != 8 * len(keys):
        raise CorruptRecordError(f"{where} holds a key that is not a trace id; run check_integrity")
    ids = np.frombuffer(raw_keys, dtype=">u8").astype(np.int64)
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    starts = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    buf = np.frombuffer(b"".join(values), dtype=np.uint8)
    try:
        counts = unpack_terms(buf, starts)
    except ValueError as exc:
        bad = int(str(exc).split()[1]) if str(exc).startswith("value ") else 0
        raise CorruptRecordError(
            f"the terms of trace {int(ids[bad])} in {where} do not decode; run check_integrity"
        ) from exc
    return ids, counts


def iter_chunks(
    txn: Txn, start: int = 0, stop: int | None = None, chunk: int = CHUNK
) -> Iterator[tuple[np.ndarray, TermCounts]]:
    """Stored terms of the traces with ``start <= id < stop``, in id order, ``chunk`` at a time.

    Yields ``(ids, counts)``: the trace ids that have terms and their terms.
    """
    if not txn.store.has_db(DB):
        return
    where = f"{txn.store.path} terms"
    # Keys and values through two cursors: lists of bytes are much cheaper to
    # build than a list of (key, value) tuples.
    key_cursor, value_cursor = txn.cursor(DB), txn.cursor(DB)
    if not key_cursor.set_range(u64_key(start)) or not value_cursor.set_range(u64_key(start)):
        return
    keys_it = key_cursor.iternext(values=False)
    values_it = value_cursor.iternext(keys=False)
    end = None if stop is None else u64_key(stop)
    # Typed as bytes: memoryviews (a buffers=True transaction) join the same way,
    # and comparing keys with ``end`` needs a buffers=False one (as read_from's callers use).
    while keys := cast("list[bytes]", list(islice(keys_it, chunk))):
        values = cast("list[bytes]", list(islice(values_it, len(keys))))
        if end is not None and keys[-1] >= end:
            cut = next(i for i, k in enumerate(keys) if k >= end)
            if cut:
                yield _decode(keys[:cut], values[:cut], where)
            return
        yield _decode(keys, values, where)


def read_from(txn: Txn, start: int, stop: int | None = None) -> tuple[np.ndarray, TermCounts]:
    """All stored terms of traces with ``start <= id < stop`` (one piece)."""
    ids: list[np.ndarray] = []
    parts: list[TermCounts] = []
    for got in iter_chunks(txn, start, stop):
        ids.append(got[0])
        parts.append(got[1])
    if not parts:
        return np.zeros(0, np.int64), concat([])
    if len(parts) == 1:
        return ids[0], parts[0]
    return np.concatenate(ids), concat(parts)


def concat(parts: Sequence[TermCounts]) -> TermCounts:
    """One :class:`TermCounts` of several, texts in order."""
    offsets = [np.zeros(1, np.int64)]
    base = 0
    for p in parts:
        offsets.append(p.offsets[1:] + base)
        base += int(p.offsets[-1])
    return TermCounts(
        np.concatenate(offsets),
        np.concatenate([p.terms for p in parts]) if parts else np.zeros(0, np.uint64),
        np.concatenate([p.tfs for p in parts]) if parts else np.zeros(0, np.uint16),
        np.concatenate([p.lengths for p in parts]) if parts else np.zeros(0, np.int64),
    )
