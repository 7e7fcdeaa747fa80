"""Content digests: which trace holds a given text, so the same content is stored once.

``content`` maps a 16-byte BLAKE2b digest of a trace's text (whitespace runs
collapsed, so reflowed copies match) to the id of the active trace holding it.
Storing adds the digest in the same transaction as the trace; retiring a trace
removes its digest (a text stored again after its trace was superseded is new
again). Functions over a :class:`~sentient_core.store.txn.Txn`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sentient_core.store.records import key_u64, u64_key
from sentient_kernels.spaces import collapse_spaces_unchecked

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["digest", "digests", "lookup", "missing", "put", "remove"]

DB = "content"

# What str.split() splits on (str.isspace, the same definition); no code point
# above U+3000 is whitespace (tests/test_spaces.py checks all of them).
_SPACE_CP = np.array([chr(c).isspace() for c in range(0x3001)], dtype=np.bool_)
_SPACE_CP.setflags(write=False)


def digest(text: str) -> bytes:
    """The content key of ``text`` (whitespace-insensitive, exact otherwise)."""
    normal = " ".join(text.split())
    return hashlib.blake2b(normal.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def digests(texts: Sequence[str]) -> list[bytes]:
    """:func:`digest` of each text: the whitespace collapsed in one kernel pass for the batch."""
    if not texts:
        return []
    parts = [t.encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
    out, spans = collapse_spaces_unchecked(buf, offsets, _SPACE_CP)
    view = memoryview(out.tobytes())
    blake = hashlib.blake2b
    bounds = spans.tolist()
    return [
        blake(view[bounds[i] : bounds[i + 1]], digest_size=16).digest() for i in range(len(parts))
    ]


def lookup(txn: Txn, key: bytes) -> int | None:
    """Id of the trace holding content ``key``, or None (also for an older read-only store)."""
    if not txn.store.has_db(DB):
        return None
    raw = txn.raw.get(key, db=txn.db(DB))
    return None if raw is None else key_u64(bytes(raw))


def put(txn: Txn, key: bytes, trace_id: int) -> bool:
    """Record that trace ``trace_id`` holds content ``key`` (the first holder is kept);
    whether it became the holder."""
    return bool(txn.raw.put(key, u64_key(trace_id), db=txn.db(DB), overwrite=False))


def remove(txn: Txn, key: bytes, trace_id: int) -> bool:
    """Forget content ``key`` if trace ``trace_id`` is its holder; whether it was."""
    if lookup(txn, key) != trace_id:
        return False
    return bool(txn.raw.delete(key, db=txn.db(DB)))


def missing(txn: Txn) -> bool:
    """Whether the store has traces but no content digests (written before digests existed)."""
    return txn.counters().trace_count > 0 and (not txn.store.has_db(DB) or txn.entries(DB) == 0)
