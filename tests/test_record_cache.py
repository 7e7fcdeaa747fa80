"""The hits' record cache: served while nothing is written, never stale after a write.

A recall keeps the decoded records of its hits (:mod:`sentient_core.memory.record_cache`)
under the store's write stamp (LMDB's last committed transaction id). These tests
write through this process and through another one and check that the next recall
reads what was written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.memory.record_cache import MAX_RECORDS, RecordCache
from sentient_core.store import Store

REPO = Path(__file__).resolve().parents[1]
DIM = 32

TEXTS = [f"tide table {i} follows the moon over harbour {i % 7}" for i in range(40)]


def _store(tmp_path: Path) -> tuple[Store, HolographicMemory]:
    st = Store.open(tmp_path / "s", code_dim=DIM)
    mem = HolographicMemory(st)
    mem.store_batch([NewTrace(text=t) for t in TEXTS])
    return st, mem


def _state(hits):
    return [(h.record.id, h.record.use_count, h.score) for h in hits]


def test_a_repeated_recall_is_served_from_the_cache_and_equal(tmp_path):
    st, mem = _store(tmp_path)
    with st:
        cache = mem._w.records
        first = mem.recall("tide table moon", 5, touch=False)
        misses = cache.misses
        second = mem.recall("tide table moon", 5, touch=False)
        assert cache.misses == misses  # nothing decoded again
        assert cache.hits >= len(second) > 0
        assert [h.record for h in first] == [h.record for h in second]


def test_a_write_in_this_process_is_seen_by_the_next_recall(tmp_path):
    st, mem = _store(tmp_path)
    with st:
        before = mem.recall("tide table moon", 5, touch=False)
        mem.recall("tide table moon", 5, touch=True)  # bumps use_count: a write
        after = mem.recall("tide table moon", 5, touch=False)
        assert [h.record.id for h in after] == [h.record.id for h in before]
        assert all(
            a.record.use_count == b.record.use_count + 1 for a, b in zip(after, before, strict=True)
        )
        top = after[0].record.id
        mem.retire([top])
        assert top not in [h.record.id for h in mem.recall("tide table moon", 5, touch=False)]


CHILD = """
import sys
from sentient_core.memory import HolographicMemory
from sentient_core.store import Store
with Store.open(sys.argv[1], code_dim=int(sys.argv[2])) as st:
    mem = HolographicMemory(st)
    hits = mem.recall("tide table moon", 5, touch=True)
    mem.retire([int(sys.argv[3])])
"""


def test_a_write_by_another_process_is_seen_by_the_next_recall(tmp_path):
    st, mem = _store(tmp_path)
    with st:
        before = mem.recall("tide table moon", 5, touch=False)
        mem.recall("tide table moon", 5, touch=False)  # cached now
        gone = before[-1].record.id
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        subprocess.run(
            [sys.executable, "-c", CHILD, str(tmp_path / "s"), str(DIM), str(gone)],
            check=True,
            env=env,
            timeout=120,
        )
        after = mem.recall("tide table moon", 5, touch=False)
        ids = [h.record.id for h in after]
        assert gone not in ids
        kept = {h.record.id: h.record for h in before if h.record.id != gone}
        for h in after:
            if h.record.id in kept:  # the other process touched them: use counts went up
                assert h.record.use_count == kept[h.record.id].use_count + 1


def test_the_cache_is_bounded(tmp_path):
    st, _ = _store(tmp_path)
    with st:
        cache = RecordCache()
        ids = list(range(len(TEXTS)))
        for _ in range(MAX_RECORDS // len(ids) + 2):
            recs = cache.get_many(st, ids)
            assert [r.id for r in recs] == ids
        assert len(cache._records) <= MAX_RECORDS
        assert cache.get_many(st, [10_000]) == [None]


def test_recall_with_the_cache_equals_recall_without(tmp_path):
    st, mem = _store(tmp_path)
    with st:
        rng = np.random.default_rng(3)
        for _ in range(20):
            q = " ".join(rng.choice([*TEXTS[0].split(), "harbour", "moon", "3"], 3))
            got = mem.recall(q, 6, touch=False)
            mem._w.records = RecordCache()  # a cold cache: every record read afresh
            want = mem.recall(q, 6, touch=False)
            assert _state(got) == _state(want)
