"""The physical floor of integration: raw LMDB puts of the bytes integration stored.

``profile`` reports chunks per second; how close that is to the limit is the ratio to
what py-lmdb itself needs to put **the same bytes** — every key and value integration
left in the store's sub-databases — into a fresh environment, durably (an fsync per
commit, as the store's default), in as many transactions as integration committed.
That is a floor no integration can beat (it does no extraction, encoding or index
work, only the writes), measured in the same run on the same disk.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import lmdb
import msgspec

if TYPE_CHECKING:
    from sentient_core.store import Store

__all__ = ["Floor", "raw_put_floor"]


class Floor(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Raw puts of a store's bytes: how many, how large, how long, in how many commits."""

    items: int
    bytes: int
    commits: int
    seconds: float


def _items(store: Store) -> list[tuple[bytes, bytes, bytes]]:
    """(sub-database, key, value) of every entry in the store's sub-databases, and the
    code rows of its code file as ``block_rows``-row values of a ``codes`` one (the
    same bytes, put as a store before the code file kept them)."""
    from sentient_core.store import DB_NAMES
    from sentient_core.store.records import u64_key

    out: list[tuple[bytes, bytes, bytes]] = []
    with store.read() as txn:
        for name in DB_NAMES:
            if name == "meta" or not store.has_db(name):
                continue
            cur = txn.raw.cursor(db=txn.db(name))
            out.extend((name.encode(), bytes(k), bytes(v)) for k, v in cur)
        if store.code_file is not None:
            rows = store.code_file.rows(txn.counters().row_count)
            per = store.block_rows
            out.extend(
                (b"codes", u64_key(i), rows[start : start + per].tobytes())
                for i, start in enumerate(range(0, rows.shape[0], per))
            )
    return out


def raw_put_floor(store: Store, commits: int, *, durable: bool = True) -> Floor:
    """Time putting ``store``'s bytes into a fresh LMDB environment in ``commits``
    equal transactions (``durable``: fsync each, as the store does by default)."""
    items = _items(store)
    commits = max(1, min(commits, len(items) or 1))
    size = sum(len(k) + len(v) for _, k, v in items)
    with tempfile.TemporaryDirectory(prefix="sentient-floor-") as tmp:
        env = lmdb.open(
            str(Path(tmp) / "floor"),
            map_size=max(1 << 26, 4 * size),
            max_dbs=64,
            sync=durable,
            metasync=durable,
        )
        try:
            dbs = {name: env.open_db(name) for name in {n for n, _, _ in items}}
            step = -(-len(items) // commits)
            t0 = time.perf_counter()
            for start in range(0, len(items), step):
                with env.begin(write=True) as txn:
                    for name, key, value in items[start : start + step]:
                        txn.put(key, value, db=dbs[name])
            seconds = time.perf_counter() - t0
        finally:
            env.close()
    return Floor(items=len(items), bytes=size, commits=commits, seconds=seconds)
