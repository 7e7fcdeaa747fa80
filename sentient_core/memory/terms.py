"""The traces' lexical terms: what they are, written with their trace, backfilled.

The terms of a text are the token encoder's content tokens
(:mod:`sentient_core.encoder`: lowercased word tokens of 2–40 characters,
stop words dropped, each hashed with :func:`~sentient_core.encoder.token_hash`)
with their counts and the text's length in tokens (:func:`count`, one
:mod:`sentient_kernels.lexical` pass over a batch). The memory writes them with
:func:`write` in the same transaction as the traces they belong to
(:mod:`sentient_core.memory.storing`), into the store's ``terms``
sub-database (:mod:`sentient_core.store.terms`), stamped with
:data:`FINGERPRINT`, so opening a store never tokenises its texts again.

A store written before terms existed, or by another tokenisation, gets them
from :func:`backfill` on its first writable open (:class:`sentient_core.core.Core`);
until then (or when opened read-only) the memory tokenises what it lacks in RAM.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from sentient_core.analysis import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS, STOP_WORDS
from sentient_core.encoder.hashing import STOP_TABLE, WORD_TABLE
from sentient_core.store import terms as store_terms
from sentient_core.store import traces
from sentient_core.store.records import u64_key
from sentient_kernels.lexical import TermCounts, count_terms

if TYPE_CHECKING:
    from sentient_core.store.records import TraceRecord
    from sentient_core.store.txn import Txn

__all__ = [
    "FINGERPRINT",
    "backfill",
    "count",
    "for_records",
    "missing",
    "select",
    "usable",
    "write",
]

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
"""Changes whenever the terms of the same text could change (stamped in the store)."""


def count(texts: Sequence[str]) -> TermCounts:
    """The terms of each text: the token encoder's content tokens, hashed and counted."""
    # Each text on its own: lower() of an ASCII text is a fast path that one
    # long joined text loses as soon as any text holds a non-ASCII character.
    parts = [t.lower().encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
    astral = bool(buf.size) and bool((buf >= 0xF0).any())  # 4-byte UTF-8 lead bytes
    return count_terms(
        buf,
        offsets,
        WORD_TABLE.get(True) if astral else WORD_TABLE.bmp,
        STOP_TABLE,
        MIN_TOKEN_CHARS,
        MAX_TOKEN_CHARS,
    )


def select(counts: TermCounts, positions: Sequence[int] | np.ndarray) -> TermCounts:
    """The texts ``positions`` of ``counts``, in that order."""
    pos = np.asarray(positions, dtype=np.int64)
    if pos.size == counts.lengths.shape[0] and (pos == np.arange(pos.size)).all():
        return counts
    lo = counts.offsets[pos]
    sizes = counts.offsets[pos + 1] - lo
    offsets = np.zeros(pos.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    take = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1] - lo, sizes)
    return TermCounts(offsets, counts.terms[take], counts.tfs[take], counts.lengths[pos])


def usable(txn: Txn) -> bool:
    """Whether the store's terms come from this tokenisation (those present can be read)."""
    return store_terms.stamp(txn) == FINGERPRINT


def missing(txn: Txn) -> bool:
    """Whether some trace lacks terms of this tokenisation (then :func:`backfill` is due)."""
    n = txn.counters().trace_count
    return n > 0 and (not usable(txn) or store_terms.entries(txn) < n)


def write(txn: Txn, ids: Sequence[int], counts: TermCounts) -> None:
    """Store the terms of new traces (in their transaction); stamp a store that had none.

    A store holding another tokenisation's terms keeps its stamp, so they are
    not mistaken for this one's: :func:`backfill` redoes them all.
    """
    if not ids:
        return
    if store_terms.stamp(txn) is None and store_terms.entries(txn) == 0:
        store_terms.set_stamp(txn, FINGERPRINT)
    store_terms.put(txn, ids, counts, append=True)


def backfill(txn: Txn) -> int:
    """Store the terms of every trace that lacks them (all of them after a tokenisation change).

    One pass over the traces, in the caller's write transaction. Returns how
    many traces got terms.
    """
    redo = not usable(txn)
    db = txn.db(store_terms.DB)
    have = txn.raw.get
    added = 0
    records = traces.iter_range(txn)
    while chunk := list(islice(records, store_terms.CHUNK)):
        batch = [r for r in chunk if redo or have(u64_key(r.id), db=db) is None]
        if batch:
            store_terms.put(txn, [r.id for r in batch], count([r.text for r in batch]))
            added += len(batch)
    store_terms.set_stamp(txn, FINGERPRINT)
    return added


def for_records(txn: Txn, recs: Sequence[TraceRecord]) -> TermCounts:
    """Terms of records in id order: the stored ones when all are there, else tokenised."""
    if recs and usable(txn):
        ids, counts = store_terms.read_from(txn, recs[0].id, recs[-1].id + 1)
        if ids.size == len(recs) and ids.tolist() == [r.id for r in recs]:
            return counts
    return count([r.text for r in recs])
