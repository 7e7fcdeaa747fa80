"""Lexical terms of each trace, kept so that opening a store never re-tokenises its texts.

``terms`` maps a trace id (8-byte big-endian, as ``traces``) to the trace's
serialised terms (:func:`kernels.lexical.pack_terms`: term hashes ascending,
their frequencies, the text's length in tokens). The terms are the token
encoder's content tokens (:func:`count`): lowercased word tokens of 2–40
characters, stop words dropped, hashed with
:func:`sentient_core.encoder.token_hash`. :func:`sentient_core.store.traces.append`
writes them in the same transaction as the trace; they never change
afterwards (retired traces keep theirs, like their records).

The tokenisation that made them is stamped in ``state`` under
:data:`FINGERPRINT_KEY`. A store written before terms existed (or by another
tokenisation) is brought up to date by :func:`backfill` on the first writable
open (:class:`sentient_core.core.Core`); a read-only reader of such a store
tokenises the texts in RAM instead (:func:`usable` says whether the stored
terms may be read). Functions over a :class:`~sentient_core.store.txn.Txn`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from kernels.lexical import TermCounts, count_terms, pack_terms, unpack_terms
from sentient_core.encoder import _STOP_TABLE, _WORD_TABLE
from sentient_core.ingest.keywords import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS, STOP_WORDS
from sentient_core.store.errors import CorruptRecordError, StoreUsageError
from sentient_core.store.records import u64_key

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "DB",
    "FINGERPRINT",
    "FINGERPRINT_KEY",
    "backfill",
    "count",
    "iter_chunks",
    "missing",
    "put",
    "read_from",
    "usable",
]

DB = "terms"
CHUNK = 65536
"""Trace terms decoded per step (bounds the transient memory of a load)."""

FINGERPRINT_KEY = b"terms/tokenizer"
"""Key in ``state`` of the fingerprint of the tokenisation the stored terms come from."""

FORMAT_VERSION = 2
FINGERPRINT: bytes = hashlib.blake2b(
    repr(
        (
            "terms",
            FORMAT_VERSION,
            "fnv1a64+splitmix",
            sorted(STOP_WORDS),
            MIN_TOKEN_CHARS,
            MAX_TOKEN_CHARS,
        )
    ).encode("utf-8"),
    digest_size=16,
).digest()
"""Changes whenever the terms of the same text could change."""


def count(texts: Sequence[str]) -> TermCounts:
    """The terms of each text: the token encoder's content tokens, hashed and counted."""
    parts = [t.lower().encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
    astral = bool(buf.size) and bool((buf >= 0xF0).any())  # 4-byte UTF-8 lead bytes
    return count_terms(
        buf, offsets, _WORD_TABLE.get(astral), _STOP_TABLE, MIN_TOKEN_CHARS, MAX_TOKEN_CHARS
    )


def usable(txn: Txn) -> bool:
    """Whether the stored terms were made by this tokenisation (and can be read)."""
    if not txn.store.has_db(DB):
        return False
    stamp = txn.get("state", FINGERPRINT_KEY)
    if stamp is None:
        return txn.entries(DB) == 0
    return bytes(stamp) == FINGERPRINT


def put(txn: Txn, ids: Sequence[int], counts: TermCounts) -> None:
    """Store the terms of traces ``ids`` (``counts`` holds one text per id)."""
    if len(ids) != counts.offsets.shape[0] - 1:
        raise StoreUsageError(
            f"terms.put needs one text of terms per trace id: {len(ids)} ids,"
            f" {counts.offsets.shape[0] - 1} texts"
        )
    if not ids:
        return
    if txn.get("state", FINGERPRINT_KEY) is None:
        txn.put("state", FINGERPRINT_KEY, FINGERPRINT)
    buf, starts = pack_terms(counts)
    raw = buf.tobytes()
    db = txn.db(DB)
    put_raw = txn.raw.put
    bounds = starts.tolist()
    for i, tid in enumerate(ids):
        put_raw(u64_key(tid), raw[bounds[i] : bounds[i + 1]], db=db)


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
    txn: Txn, start: int = 0, chunk: int = CHUNK
) -> Iterator[tuple[np.ndarray, TermCounts]]:
    """Stored terms of the traces with id >= ``start``, in id order, ``chunk`` traces at a time.

    Yields ``(ids, counts)``: the trace ids that have terms and their terms.
    Check :func:`usable` first.
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
    while keys := list(islice(keys_it, chunk)):
        values = list(islice(values_it, len(keys)))
        yield _decode(keys, values, where)


def read_from(txn: Txn, start: int) -> tuple[np.ndarray, TermCounts]:
    """All stored terms of traces with id >= ``start`` (one piece; for small refreshes)."""
    ids: list[np.ndarray] = []
    parts: list[TermCounts] = []
    for got in iter_chunks(txn, start):
        ids.append(got[0])
        parts.append(got[1])
    if not parts:
        empty = np.zeros(0, np.int64)
        return empty, TermCounts(
            np.zeros(1, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.uint16), empty
        )
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
        np.concatenate([p.terms for p in parts]),
        np.concatenate([p.tfs for p in parts]),
        np.concatenate([p.lengths for p in parts]),
    )


def missing(txn: Txn) -> bool:
    """Whether some trace lacks stored terms, or they come from another tokenisation."""
    if txn.counters().trace_count == 0:
        return False
    if not txn.store.has_db(DB) or not usable(txn):
        return True
    return txn.entries(DB) < txn.counters().trace_count


def backfill(txn: Txn) -> int:
    """Store the terms of every trace that has none (all of them after a tokenisation change).

    For stores written before terms existed: one pass over the traces, in the
    caller's write transaction. Returns how many traces got terms.
    """
    from sentient_core.store import traces  # traces imports this module

    redo = not usable(txn)
    have = txn.raw.get
    db = txn.db(DB)
    added = 0
    records = traces.iter_range(txn)
    while chunk := list(islice(records, CHUNK)):
        batch = [r for r in chunk if redo or have(u64_key(r.id), db=db) is None]
        if batch:
            put(txn, [r.id for r in batch], count([r.text for r in batch]))
            added += len(batch)
    txn.put("state", FINGERPRINT_KEY, FINGERPRINT)
    return added
