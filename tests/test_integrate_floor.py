"""The integration floor puts the bytes the store holds: its LMDB entries and its code rows."""

from __future__ import annotations

import numpy as np

from sentient_core.integrate.floor import raw_put_floor
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.store import DB_NAMES, Store


def test_the_floor_puts_every_entry_and_every_code_row(tmp_path):
    rng = np.random.default_rng(0)
    with Store.open(tmp_path / "s", code_dim=16, block_rows=512, durable=False) as store:
        memory = HolographicMemory(store)
        memory.store_batch(
            [
                NewTrace(
                    text=f"passage {i} about topic {i % 7}",
                    code=rng.standard_normal(16).astype(np.float32),
                )
                for i in range(3000)
            ]
        )
        entries = size = 0
        with store.read() as txn:
            for name in DB_NAMES:
                if name != "meta" and store.has_db(name):
                    for k, v in txn.raw.cursor(db=txn.db(name)):
                        entries += 1
                        size += len(k) + len(v)
        floor = raw_put_floor(store, commits=3, durable=False)
    blocks = -(-3000 // 512)
    assert floor.items == entries + blocks
    assert floor.bytes == size + blocks * 8 + 3000 * 16 * 4
    assert floor.commits == 3 and floor.seconds > 0
