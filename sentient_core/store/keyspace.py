"""Prefixed key spaces inside one sub-database: functions over a :class:`~sentient_core.store.txn.Txn`.

Several meta-memory record kinds share a sub-database (the ``scorer``
sub-database holds scorer snapshots and the credit records of traces; the
``sources`` one holds weights and per-domain windows). Each kind owns a key
prefix of ASCII letters and ``/``; numbered records use ``prefix + 8-byte
big-endian number`` so a cursor visits them in numeric order, and named ones
``prefix + 16-byte BLAKE2b digest`` of their name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from sentient_core.store.records import key_u64, u64_key

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["digest_key", "iter_prefix", "last_number", "name_digest", "number_key", "number_of"]


def name_digest(*parts: str) -> bytes:
    """16-byte BLAKE2b digest of ``parts`` joined by NUL (so ``("a", "bc") != ("ab", "c")``)."""
    joined = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(joined, digest_size=16).digest()


def number_key(prefix: bytes, n: int) -> bytes:
    """``prefix`` followed by ``n`` as 8 big-endian bytes."""
    return prefix + u64_key(n)


def number_of(prefix: bytes, key: bytes | memoryview) -> int:
    """Inverse of :func:`number_key`."""
    return key_u64(bytes(key)[len(prefix) :])


def digest_key(prefix: bytes, *parts: str) -> bytes:
    """``prefix`` followed by :func:`name_digest` of ``parts``."""
    return prefix + name_digest(*parts)


def iter_prefix(txn: Txn, db: str, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
    """``(key, value)`` of every key starting with ``prefix``, in key order (copied out)."""
    cur = txn.cursor(db)
    if not cur.set_range(prefix):
        return
    for key, value in cur.iternext():
        k = bytes(key)
        if not k.startswith(prefix):
            return
        yield k, bytes(value)


def last_number(txn: Txn, db: str, prefix: bytes) -> int:
    """The highest number stored under ``prefix`` (keys from :func:`number_key`); -1 if none."""
    cur = txn.cursor(db)
    end = number_key(prefix, (1 << 64) - 1)
    if cur.set_range(end):
        key = bytes(cur.key())
        if key == end:
            return (1 << 64) - 1
        if not cur.prev():
            return -1
    elif not cur.last():
        return -1
    key = bytes(cur.key())
    if not key.startswith(prefix) or len(key) != len(prefix) + 8:
        return -1
    return number_of(prefix, key)
