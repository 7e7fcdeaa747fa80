"""Schema-1 and schema-2 stores as older versions wrote them.

:func:`downgrade_to_schema_2` rewrites a closed store made by this version into the
layout before the column checkpoint (``columns.ckpt``): no checkpoint named in
``meta``, no dirty-block marks, the file removed, the header's schema version 2.
:func:`downgrade_to_schema_1` also moves the code rows back into the layout before
``codes.f32``: every row into blocks of ``block_rows`` rows under 8-byte big-endian
block numbers, the header's schema version 1, the file removed. Everything else
(traces, terms, column blocks, ...) is the same in every layout.
"""

from __future__ import annotations

from pathlib import Path

import lmdb
import msgspec
import numpy as np

from sentient_core.store import colblocks, colfile
from sentient_core.store.codefile import FILE_NAME
from sentient_core.store.env import META_KEY
from sentient_core.store.records import COUNTERS, decode_meta, encode_meta, u64_key
from sentient_core.store.txn import COUNTERS_KEY


def downgrade_to_schema_2(path: Path) -> None:
    """Rewrite the closed store at ``path`` as schema 2 (no column checkpoint)."""
    env = lmdb.open(str(path), max_dbs=64, map_size=1 << 34)
    try:
        meta_db = env.open_db(b"meta", create=False)
        with env.begin(write=True) as txn:
            meta = decode_meta(txn.get(META_KEY, db=meta_db), str(path))
            txn.delete(colblocks.CKPT_KEY, db=meta_db)
            try:
                dirty = env.open_db(colblocks.DIRTY_DB.encode(), txn=txn, create=False)
            except lmdb.NotFoundError:
                pass
            else:
                txn.drop(dirty, delete=True)
            old = msgspec.structs.replace(meta, schema_version=2)
            txn.put(META_KEY, encode_meta(old), db=meta_db)
    finally:
        env.close()
    (path / colfile.FILE_NAME).unlink(missing_ok=True)


def downgrade_to_schema_1(path: Path) -> int:
    """Rewrite the closed store at ``path`` as schema 1; return its rows."""
    downgrade_to_schema_2(path)
    env = lmdb.open(str(path), max_dbs=64, map_size=1 << 34)
    try:
        meta_db = env.open_db(b"meta", create=False)
        codes_db = env.open_db(b"codes", create=False)
        with env.begin(write=True) as txn:
            meta = decode_meta(txn.get(META_KEY, db=meta_db), str(path))
            n = COUNTERS.decode(txn.get(COUNTERS_KEY, db=meta_db)).row_count
            dim, per_block = meta.code_dim, meta.block_rows
            rows = np.fromfile(path / FILE_NAME, dtype=np.float32, count=n * dim)
            rows = rows.reshape(n, dim)
            for block, start in enumerate(range(0, n, per_block)):
                txn.put(u64_key(block), rows[start : start + per_block].tobytes(), db=codes_db)
            old = msgspec.structs.replace(meta, schema_version=1)
            txn.put(META_KEY, encode_meta(old), db=meta_db)
    finally:
        env.close()
    (path / FILE_NAME).unlink()
    return n
