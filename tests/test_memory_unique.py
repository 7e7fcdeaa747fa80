"""The same content is stored once: content digests, near-duplicates, supersession."""

from __future__ import annotations

import lmdb
import numpy as np
import pytest

from sentient_core.core import Core
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.store import Store, check_integrity, content

A = "Ocean tides are caused by the pull of the moon and the sun on the oceans."
B = "Honey bees tell the direction of flowers with a waggle dance relative to the sun."


@pytest.fixture
def memory(tmp_path):
    with Store.open(tmp_path / "s", code_dim=256) as store:
        yield HolographicMemory(store)


def test_exact_duplicates_store_nothing_and_bump_the_holder(memory):
    (first,) = memory.store_unique([NewTrace(text=A)])
    assert first.new and first.record.use_count == 0
    again = memory.store_unique([NewTrace(text="  " + A.replace(" ", "\n  ")), NewTrace(text=B)])
    assert [s.new for s in again] == [False, True]
    assert again[0].record.id == first.record.id
    assert again[0].record.use_count == 1
    assert "same content as trace" in again[0].reason
    assert memory.count == 2
    assert memory.get(first.record.id).use_count == 1


def test_repeats_inside_one_batch_are_stored_once(memory):
    out = memory.store_unique([NewTrace(text=A), NewTrace(text=B), NewTrace(text=A)])
    assert [s.new for s in out] == [True, True, False]
    assert out[2].record.id == out[0].record.id and out[2].reason == "repeated in this batch"
    assert memory.count == 2


def test_near_duplicates_by_code_cosine(memory):
    memory.store_unique([NewTrace(text=A)])
    variant = A.replace("oceans", "seas")
    (loose,) = memory.store_unique([NewTrace(text=variant)], near=None)
    assert loose.new  # exact check only: a different text is new
    (strict,) = memory.store_unique([NewTrace(text=A + " Always.")], near=0.5)
    assert not strict.new and "near-duplicate" in strict.reason
    with pytest.raises(ValueError):
        memory.store_unique([NewTrace(text=B)], near=1.5)


def test_a_retired_holder_frees_its_content(memory):
    (old,) = memory.store_unique([NewTrace(text=A)])
    memory.retire([old.record.id])
    (again,) = memory.store_unique([NewTrace(text=A)])
    assert again.new and again.record.id != old.record.id
    assert check_integrity(memory.datastore).ok


def test_every_append_registers_its_content(memory):
    (rec,) = memory.store_batch([NewTrace(text=B)])
    with memory.datastore.read() as txn:
        assert content.lookup(txn, content.digest(B)) == rec.id
    # store_batch never dedupes, but the first holder keeps the content
    (dup,) = memory.store_batch([NewTrace(text=B)])
    with memory.datastore.read() as txn:
        assert content.lookup(txn, content.digest(B)) == rec.id != dup.id


def test_older_stores_get_digests_once_and_open_read_only_without_them(tmp_path):
    path = tmp_path / "old"
    with Core(path) as core:
        core.memory.store_batch([NewTrace(text=A), NewTrace(text=B)])
    # Make it look like a store from before content digests: drop the sub-database.
    env = lmdb.open(str(path), max_dbs=64)
    with env.begin(write=True) as txn:
        txn.drop(env.open_db(b"content", txn=txn), delete=True)
    env.close()
    with Core(path, readonly=True) as core:  # read-only: works without it
        assert core.memory.count == 2
        assert not core.store.has_db("content")
    with Core(path) as core:  # writable: the sub-database is added and filled
        with core.store.read() as txn:
            assert txn.entries("content") == 2
        (dup,) = core.memory.store_unique([NewTrace(text=A)])
        assert not dup.new
        assert np.isfinite(dup.record.strength)
