"""sentient_core.cluster over Ray actors: the same recall as one memory, writes read
back at once, a killed shard actor restarted by Ray.

Marked ``ray``; skipped when ray (the ``cluster`` extra) is not installed. One
local Ray for the module (2 CPUs, no dashboard, a 200 MB object store, its temp
dir and ``HOME`` under the test's temporary directory: Ray >= 2.60 writes an auth
token to ``~/.ray``). The traces, queries and ties are those of
tests/test_cluster_local.py, stored in 2 shards of very different sizes (85% /
15%) served by actors and in one single-node memory in global-id order.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import numpy as np
import pytest

from sentient_core.cluster import ShardedMemory, ids
from sentient_core.errors import ArgumentError
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.store import Store, check_integrity
from tests.test_cluster_local import DIM, KS, N, _items, _key, _queries

ray = pytest.importorskip("ray")
ray_backend = pytest.importorskip("sentient_core.cluster.ray_backend")

# Under `pytest -n 2` the module's tests may land on both workers: each starts its own
# local Ray (~0.7 GB idle). `pytest -m ray` in one process starts one.
pytestmark = pytest.mark.ray

SIZES = [round(0.85 * N), N - round(0.85 * N)]
KILL_ROWS = 10_000  # per shard in the kill test


@pytest.fixture(scope="module")
def ray_root(tmp_path_factory):
    """A local Ray for the module, its state (and HOME) in a short temporary directory."""
    root = tmp_path_factory.mktemp("ray")
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = str(root / "home")
    (root / "home").mkdir()
    # Ray's socket paths live under its temp dir: pytest's (under xdist) is too long.
    short = tempfile.mkdtemp(prefix="sray", dir="/tmp")
    started = ray_backend.init_ray(root, temp_dir=short)
    try:
        yield root
    finally:
        if started:
            ray.shutdown()
        shutil.rmtree(short, ignore_errors=True)
        if old_home is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = old_home


@pytest.fixture(scope="module")
def world(ray_root):
    """The single memory and the same traces in 2 Ray shards (contiguous blocks)."""
    items = _items(7)
    rng = np.random.default_rng(11)
    retire = sorted(set(rng.integers(0, N, size=N // 20).tolist()))
    single_store = Store.open(ray_root / "single", code_dim=DIM, durable=False)
    single = HolographicMemory(single_store)
    single_ids = [r.id for r in single.store_batch(items)]
    single.retire([single_ids[i] for i in retire])
    mem = ShardedMemory.open_ray(ray_root / "sharded", 2, code_dim=DIM, durable=False)
    gid_of = []
    start = 0
    for s, size in enumerate(SIZES):
        for a in range(start, start + size, 400):
            chunk = items[a : min(a + 400, start + size)]
            gid_of.extend(r.id for r in mem.store_batch(chunk, shard=s))
        start += size
    assert gid_of == sorted(gid_of)
    mem.retire([gid_of[i] for i in retire])
    yield (
        single,
        {sid: i for i, sid in enumerate(single_ids)},
        mem,
        {g: i for i, g in enumerate(gid_of)},
        items,
    )
    mem.close()
    single_store.close()


def test_the_shards_are_actors_in_other_processes(world):
    _, _, mem, _, _ = world
    shards = mem.shards
    assert isinstance(shards, ray_backend.RayShards)
    pids = {ray.get(shards.actor(s).pid.remote()) for s in range(shards.size)}
    assert len(pids) == 2 and os.getpid() not in pids
    assert [i.n for i in mem.infos()] == SIZES


def test_text_recall_equals_one_memory(world):
    for rank in ("cosine", "bm25", "hybrid"):
        _text_recall_equals_one_memory(world, rank)


def _text_recall_equals_one_memory(world, rank):
    single, item_of_single, mem, item_of, items = world
    rng = np.random.default_rng(hash(("ray", rank)) % 2**32)
    ties = 0
    queries = _queries(rng, items, 60)
    for j, q in enumerate(queries):
        k = KS[j % len(KS)]
        want = _key(single.recall(q, k, touch=False, rank=rank), item_of_single)
        got = _key(mem.recall(q, k, touch=False, rank=rank), item_of)
        assert got == want, (rank, q, k)  # ids and scores, bit for bit
        ties += len(want[1]) - len(set(want[1]))
    assert ties > 10, rank  # planted ties reached the results
    # A batch: one call per shard per phase for every query.
    want_b = single.recall_batch(queries, 20, touch=False, rank=rank)
    got_b = mem.recall_batch(queries, 20, touch=False, rank=rank)
    assert [_key(h, item_of) for h in got_b] == [_key(h, item_of_single) for h in want_b]


def test_code_recall_equals_one_memory_bit_for_bit(world):
    single, item_of_single, mem, item_of, items = world
    rng = np.random.default_rng(5)
    shared = [it.code for it in items if it.code is not None][:8]
    queries = [
        np.asarray(shared[j % 8], dtype=np.float32) + 0.0
        if j % 3 == 0
        else rng.standard_normal(DIM).astype(np.float32)
        for j in range(60)
    ]
    ties = 0
    for j, q in enumerate(queries):
        k = KS[j % len(KS)]
        want = _key(single.recall(q, k, touch=False), item_of_single)
        assert _key(mem.recall(q, k, touch=False), item_of) == want
        ties += len(want[1]) - len(set(want[1]))
    assert ties > 20  # the repeated codes tie across the two shards


def test_shard_errors_reach_the_caller_as_themselves(world):
    _, _, mem, _, _ = world
    with pytest.raises(ArgumentError, match="is not a read call"):
        ray.get(mem.shards.actor(0).read.remote("store_batch", ([],), {}))
    with pytest.raises(ArgumentError):  # raised in the actor, re-raised unwrapped
        mem.shards.call(0, "store_batch", [NewTrace(text="x", code=np.ones(DIM + 1))])


def test_read_your_writes(ray_root):
    """Commit-then-recall over 2 actor shards: each new trace is found at once."""
    mem = ShardedMemory.open_ray(ray_root / "ryw", 2, code_dim=32, durable=False)
    with mem:
        misses = 0
        for i in range(300):
            text = f"note tag{i}q about the harbour"
            rec = mem.store_batch([NewTrace(text=text, primes=())], shard=i % 2)[0]
            assert ids.shard_of(rec.id) == i % 2
            hits = mem.recall(f"tag{i}q", 1, touch=False, rank="bm25")
            misses += not hits or hits[0].record.id != rec.id
        assert misses == 0
        assert [i.active for i in mem.infos()] == [150, 150]


def test_a_killed_shard_actor_comes_back_with_its_traces(ray_root):
    """ray.kill one 10k-trace shard's actor (Ray restarts it): the next recall, submitted
    while it restarts, is retried and equals the recall before the kill; nothing committed
    is lost and the store checks clean. The time to the first correct answer is printed."""
    path = ray_root / "kill"
    mem = ShardedMemory.open_ray(path, 2, code_dim=32, durable=False)
    with mem:
        texts = [f"kelp {i} reef tide{i % 7} moon" for i in range(2 * KILL_ROWS)]
        for s in (0, 1):
            mine = texts[s::2]
            for a in range(0, KILL_ROWS, 5000):
                mem.store_batch([NewTrace(text=t) for t in mine[a : a + 5000]], shard=s)
        queries = [f"tide{i} moon" for i in range(7)]
        before = [
            _key(h, {g: g for g in _ids(h)})
            for h in mem.recall_batch(queries, 15, touch=False, rank="bm25")
        ]
        actor = mem.shards.actor(1)
        pid = ray.get(actor.pid.remote())
        for trial in range(3):
            ray.kill(actor, no_restart=False)
            t0 = time.perf_counter()
            after = mem.recall_batch(queries, 15, touch=False, rank="bm25")  # retried reads
            took = time.perf_counter() - t0
            assert [_key(h, {g: g for g in _ids(h)}) for h in after] == before, trial
            pid = _restarted(actor, pid)
            print(f"kill {trial}: first correct answer after {took:.2f} s")
        # Writes go on after the restarts: the restarted server is the shard's writer.
        rec = mem.store("a note after the restarts", shard=1)
        assert mem.recall("restarts", 1, touch=False, rank="bm25")[0].record.id == rec.id
        assert mem.count == 2 * KILL_ROWS + 1
    for s in (0, 1):
        with Store.open(path / f"shard-{s:04d}", readonly=True) as store:
            assert check_integrity(store).ok


def _restarted(actor, old_pid: int) -> int:
    """The actor's new pid (ray.kill lands asynchronously: a call right after it may still
    reach the old process). Gives up after 60 s: a timeout, not a speed check."""
    for _ in range(600):
        pid = ray.get(actor.pid.remote())
        if pid != old_pid:
            return pid
        time.sleep(0.1)
    raise AssertionError("the killed actor still answers from its old process")


def _ids(hits):
    return [h.record.id for h in hits]
