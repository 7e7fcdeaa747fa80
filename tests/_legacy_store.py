"""Schema-1 stores (code rows in the ``codes`` sub-database) as older versions wrote them.

:func:`downgrade_to_schema_1` rewrites a closed store made by this version into the
layout before ``codes.f32``: every row into blocks of ``block_rows`` rows under
8-byte big-endian block numbers, the header's schema version 1, the file removed.
Everything else (traces, terms, column blocks, ...) is the same in both layouts.
"""

from __future__ import annotations

from pathlib import Path

import lmdb
import msgspec
import numpy as np

from sentient_core.store.codefile import FILE_NAME
from sentient_core.store.env import META_KEY
from sentient_core.store.records import COUNTERS, decode_meta, encode_meta, u64_key
from sentient_core.store.txn import COUNTERS_KEY


def downgrade_to_schema_1(path: Path) -> int:
    """Rewrite the closed store at ``path`` as schema 1; return its rows."""
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
