"""sentient_core.cluster over in-process shards: the same recall as one memory.

The same traces are stored in 1, 2 and 4 shards (sizes very different: one
shard a few dozen traces, one empty in a fourth layout) and in one single-node
memory that holds them in global-id order (shard 0's traces, then shard 1's,
...: its row order is the global-id order, so its ties by row are ties by
global id). Planted ties: texts stored twice in different shards (same BM25,
same code) and explicit codes repeated across shards. Some traces are retired
in every memory. For >= 200 queries per rank and several k (some above a
shard's size), the sharded top-k must equal the single memory's: cosine ids
and scores bit for bit, BM25 and hybrid the same ids and scores within 1e-12
(relative). Read-your-writes: a recall right after ``store_batch`` returns sees
the new trace, 1,000 times in a row. (BM25 and hybrid scores come out bit for
bit equal too, and are tested so.)
"""

from __future__ import annotations

import numpy as np
import pytest

from sentient_core.cluster import LocalShards, ShardedMemory, ShardServer, ids, shard_dir
from sentient_core.errors import ArgumentError
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.store import Store, check_integrity
from sentient_core.store.errors import StoreUsageError

DIM = 64
N = 1200
WORDS = [
    *("tide", "moon", "orbit", "gravity", "ocean", "wave", "salt", "reef", "coral", "kelp"),
    *("storm", "wind", "sail", "harbour", "anchor", "compass", "chart", "island", "current"),
    *("drift", "lantern", "basalt", "quartz", "meadow", "falcon", "ember", "glacier", "delta"),
]
PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37]
# Shard sizes as fractions of N (the last shard takes the rest).
LAYOUTS = {
    1: [1.0],
    2: [0.85, 0.15],
    4: [0.025, 0.55, 0.08, 0.345],
    "4e": [0.4, 0.0, 0.35, 0.25],  # an empty shard
}


def _items(seed: int) -> list[NewTrace]:
    """N traces: Zipf texts, exact duplicate texts far apart (cross-shard ties) and
    repeated explicit codes (cosine ties)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, len(WORDS) + 1)
    p /= p.sum()
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 20)), p=p)) for _ in range(N)]
    for i in rng.integers(N // 2, N, size=N // 12):  # a copy of a text from the first half
        texts[i] = texts[int(rng.integers(0, N // 2))]
    shared = rng.standard_normal((8, DIM)).astype(np.float32)
    fields = rng.standard_normal((6, 16))
    items = []
    for i, t in enumerate(texts):
        code = shared[i % 8] if i % 11 == 0 else None  # the same 8 codes all over
        # Explicit primes (few distinct: many overlaps tie) and SMF fields (six repeated).
        primes = tuple(sorted(set(rng.choice(PRIMES, size=int(rng.integers(1, 5))).tolist())))
        smf = fields[i % 6] if i % 5 == 0 else rng.standard_normal(16)
        items.append(NewTrace(text=t, code=code, primes=primes, smf=tuple(smf.tolist())))
    return items


def _clock() -> float:
    return 1.7e9


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The single memory and every sharded layout over the same traces (module-wide)."""
    root = tmp_path_factory.mktemp("cluster")
    items = _items(7)
    rng = np.random.default_rng(11)
    retire = sorted(set(rng.integers(0, N, size=N // 20).tolist()))
    single_store = Store.open(root / "single", code_dim=DIM, durable=False)
    # One clock for every memory: equal creation times (recall by primes orders by them).
    single = HolographicMemory(single_store, clock=_clock)
    single_ids = [r.id for r in single.store_batch(items)]
    single.retire([single_ids[i] for i in retire])
    layouts = {}
    for name, fracs in LAYOUTS.items():
        sizes = [round(f * N) for f in fracs[:-1]]
        sizes.append(N - sum(sizes))
        mem = ShardedMemory.open_local(
            root / f"layout-{name}", len(sizes), code_dim=DIM, durable=False, clock=_clock
        )
        gid_of = []
        start = 0
        for s, size in enumerate(sizes):  # contiguous blocks: global-id order = item order
            for a in range(start, start + size, 400):
                chunk = items[a : min(a + 400, start + size)]
                gid_of.extend(r.id for r in mem.store_batch(chunk, shard=s))
            start += size
        assert gid_of == sorted(gid_of)
        assert mem.retire([gid_of[i] for i in retire]) == sorted(gid_of[i] for i in retire)
        layouts[name] = (mem, {g: i for i, g in enumerate(gid_of)}, sizes)
    item_of_single = {sid: i for i, sid in enumerate(single_ids)}
    yield single, item_of_single, layouts, items
    for mem, _, _ in layouts.values():
        mem.close()
    single_store.close()


def _queries(rng, items: list[NewTrace], count: int) -> list[str]:
    out = []
    for j in range(count):
        kind = j % 4
        if kind == 0:  # a stored text: its duplicates tie
            out.append(items[int(rng.integers(0, N))].text)
        elif kind == 1:
            out.append(" ".join(rng.choice(WORDS, size=int(rng.integers(1, 4)))))
        elif kind == 2:  # a rare word and a word no trace holds
            out.append(f"{rng.choice(WORDS[-9:])} nonexistentword{j}")
        else:
            out.append(" ".join(rng.choice(WORDS, size=int(rng.integers(4, 12)))))
    return out


def _key(hits, item_of):
    return [item_of[h.record.id] for h in hits], [h.score for h in hits]


KS = (1, 10, 45, 400)  # 45 is above the tiny shard's 30 traces; 400 above most shards


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("rank", ["cosine", "bm25", "hybrid"])
def test_text_recall_equals_one_memory(world, layout, rank):
    single, item_of_single, layouts, items = world
    mem, item_of, _ = layouts[layout]
    rng = np.random.default_rng(hash((str(layout), rank)) % 2**32)
    compared = ties = 0
    for j, q in enumerate(_queries(rng, items, 220)):
        k = KS[j % len(KS)]
        want = single.recall(q, k, touch=False, rank=rank)
        got = mem.recall(q, k, touch=False, rank=rank)
        w_items, w_scores = _key(want, item_of_single)
        g_items, g_scores = _key(got, item_of)
        assert g_items == w_items, (q, k)
        np.testing.assert_allclose(g_scores, w_scores, rtol=1e-12, atol=0)
        # Bit for bit, BM25 and hybrid too: the shards score with the single memory's
        # integer sums (N, total length, df) divided once, by the same kernel operations.
        assert g_scores == w_scores
        for h, w in zip(got, want, strict=True):
            assert (h.lexical is None) == (w.lexical is None)
            assert (h.cosine is None) == (w.cosine is None)
        compared += 1
        ties += len(w_scores) - len(set(w_scores))
    assert compared >= 200
    assert ties > 50  # planted ties reached the results (across shards, in most layouts)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_code_recall_equals_one_memory_bit_for_bit(world, layout):
    single, item_of_single, layouts, items = world
    mem, item_of, _ = layouts[layout]
    rng = np.random.default_rng(5)
    shared = [it.code for it in items if it.code is not None][:8]
    ties = 0
    queries = []
    for j in range(210):
        if j % 3 == 0:
            q = np.asarray(shared[j % 8], dtype=np.float32) + 0.0
        else:
            q = rng.standard_normal(DIM).astype(np.float32)
        queries.append(q)
        k = KS[j % len(KS)]
        want = _key(single.recall(q, k, touch=False), item_of_single)
        got = _key(mem.recall(q, k, touch=False), item_of)
        assert got == want  # ids and scores, bit for bit
        ties += len(want[1]) - len(set(want[1]))
    assert ties > 100  # the repeated codes tie across shards
    # The batch: one call per shard for all the queries.
    batch = np.stack(queries)
    want_b = single.recall_batch(batch, 12, touch=False)
    got_b = mem.recall_batch(batch, 12, touch=False)
    assert [_key(h, item_of) for h in got_b] == [_key(h, item_of_single) for h in want_b]


@pytest.mark.parametrize("rank", ["cosine", "bm25", "hybrid"])
def test_text_batches_equal_one_memory(world, rank):
    single, item_of_single, layouts, items = world
    mem, item_of, _ = layouts[4]
    qs = [*_queries(np.random.default_rng(3), items, 60), "", "the of and"]
    want = single.recall_batch(qs, 20, touch=False, rank=rank)
    got = mem.recall_batch(qs, 20, touch=False, rank=rank)
    for g, w in zip(got, want, strict=True):
        assert _key(g, item_of)[0] == _key(w, item_of_single)[0]
        np.testing.assert_allclose(_key(g, item_of)[1], _key(w, item_of_single)[1], rtol=1e-12)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_recall_by_smf_and_by_primes_equal_one_memory(world, layout):
    single, item_of_single, layouts, items = world
    mem, item_of, _ = layouts[layout]
    rng = np.random.default_rng(21)
    ties = 0
    for j in range(120):
        k = KS[j % len(KS)]
        s = np.asarray(items[5 * int(rng.integers(0, 6))].smf) if j % 2 else rng.standard_normal(16)
        want = _key(single.recall_by_smf(s, k, touch=False), item_of_single)
        got = _key(mem.recall_by_smf(s, k, touch=False), item_of)
        assert got == want  # bit for bit
        ties += len(want[1]) - len(set(want[1]))
        primes = rng.choice(PRIMES, size=int(rng.integers(1, 4))).tolist()
        want = _key(single.recall_by_primes(primes, k, touch=False), item_of_single)
        got = _key(mem.recall_by_primes(primes, k, touch=False), item_of)
        assert got == want
    assert ties > 50
    assert mem.recall_by_primes([], 3, touch=False) == []
    with pytest.raises(ArgumentError):
        mem.recall_by_smf(np.ones(3), 3)


def test_threshold_and_retired_traces(world):
    single, item_of_single, layouts, items = world
    mem, item_of, _ = layouts[2]
    rng = np.random.default_rng(9)
    for q in _queries(rng, items, 40):
        for threshold in (0.05, 0.3):
            want = single.recall(q, 30, threshold=threshold, touch=False)
            got = mem.recall(q, 30, threshold=threshold, touch=False)
            assert _key(got, item_of)[0] == _key(want, item_of_single)[0]
            assert all(h.score >= threshold for h in got)
            assert not any(h.record.retired for h in got)
    assert mem.count == single.count and mem.total == single.total


def test_hits_carry_global_ids_and_rows_within_their_shard(world):
    _, _, layouts, items = world
    mem, _item_of, sizes = layouts[4]
    hits = mem.recall(items[N - 1].text, 50, touch=False, rank="bm25")
    assert {ids.shard_of(h.record.id) for h in hits} >= {3}
    for h in hits:
        rec = mem.get(h.record.id)
        assert rec is not None and rec.id == h.record.id and rec.text == h.record.text
        assert h.row == rec.row < sizes[ids.shard_of(h.record.id)]
    assert mem.get(ids.pack(3, 10**9)) is None
    assert mem.get(ids.pack(9, 0)) is None  # no such shard


def test_read_your_writes(tmp_path):
    """1,000 commit-then-recall checks over 3 shards: each new trace is found at once."""
    mem = ShardedMemory.open_local(tmp_path / "ryw", 3, code_dim=32, durable=False)
    with mem:
        misses = 0
        checks = 0
        for i in range(1000):
            text = f"note tag{i}q about the harbour"
            rec = mem.store_batch([NewTrace(text=text, primes=())], shard=i % 3)[0]
            assert ids.shard_of(rec.id) == i % 3
            hits = mem.recall(f"tag{i}q", 1, touch=False, rank="bm25")
            misses += not hits or hits[0].record.id != rec.id
            checks += 1
            if i % 10 == 0:  # and by its code, across every shard
                code = mem.get(rec.id)
                assert code is not None
                top = mem.recall(text, 3, touch=False, rank="cosine")
                misses += rec.id not in [h.record.id for h in top]
                checks += 1
        assert checks >= 1000 and misses == 0
        assert mem.count == 1000
        assert [i.active for i in mem.infos()] == [334, 333, 333]


def test_touch_and_writes_go_to_the_owning_shard(tmp_path):
    with ShardedMemory.open_local(tmp_path / "t", 2, code_dim=32, durable=False, home=1) as mem:
        a = mem.store("kelp forest near the reef", shard=0)
        b = mem.store("kelp and coral")  # the home shard
        assert (ids.shard_of(a.id), ids.shard_of(b.id)) == (0, 1)
        hits = mem.recall("kelp", 5, rank="bm25")
        assert sorted(h.record.id for h in hits) == sorted([a.id, b.id])
        assert all(h.record.use_count == 1 for h in hits)
        assert mem.get(a.id).use_count == 1 and mem.get(b.id).use_count == 1
        mem.update([__import__("msgspec").structs.replace(mem.get(a.id), strength=0.9)])
        assert mem.get(a.id).strength == 0.9
        assert mem.retire([a.id, a.id]) == [a.id]
        assert [h.record.id for h in mem.recall("kelp", 5, rank="bm25", touch=False)] == [b.id]
        with pytest.raises(ArgumentError):
            mem.retire([ids.pack(5, 1)])
        with pytest.raises(ArgumentError):
            mem.store("x", shard=2)
    for s in range(2):
        with Store.open(shard_dir(tmp_path / "t", s), readonly=True) as st:
            assert check_integrity(st).ok


class _RetireBetweenPhases:
    """A LocalShards that retires ``victims`` in shard 1 right after a phase 1."""

    def __init__(self, inner: LocalShards, victims: list[int]) -> None:
        self.inner, self.victims, self.phase2 = inner, victims, []
        self.size = inner.size

    def call(self, shard, method, *args, **kwargs):
        return self.inner.call(shard, method, *args, **kwargs)

    def map(self, method, args, kwargs=None):
        got = self.inner.map(method, args, kwargs)
        if method == "lex_stats" and self.victims:
            self.inner.call(1, "retire", self.victims)
            self.victims = []
        if method == "search_lexical":
            self.phase2.append(any(v is None for v in got.values()))
        return got

    def close(self):
        self.inner.close()


def test_a_retirement_between_the_phases_runs_them_again(tmp_path):
    texts = [f"reef kelp {'coral ' * (i % 4)}note{i}" for i in range(40)]
    one = HolographicMemory(Store.open(tmp_path / "one", code_dim=32, durable=False), clock=_clock)
    one_ids = [r.id for r in one.store_batch([NewTrace(text=t, primes=()) for t in texts])]
    shards = LocalShards.open(tmp_path / "sh", 2, code_dim=32, durable=False, clock=_clock)
    wrapped = _RetireBetweenPhases(shards, [])
    with ShardedMemory(wrapped) as mem:
        gid = [
            r.id
            for r in mem.store_batch([NewTrace(text=t, primes=()) for t in texts[:25]], shard=0)
        ]
        gid += [
            r.id
            for r in mem.store_batch([NewTrace(text=t, primes=()) for t in texts[25:]], shard=1)
        ]
        # Retire the strongest coral traces of shard 1 while the query is between its phases.
        victims = [i for i in range(25, 40) if i % 4 == 3][:3]
        wrapped.victims = [ids.local_of(gid[i]) for i in victims]
        one.retire([one_ids[i] for i in victims])
        for rank in ("bm25", "hybrid"):
            got = [
                (gid.index(h.record.id), h.score)
                for h in mem.recall("coral reef", 12, touch=False, rank=rank)
            ]
            want = [
                (one_ids.index(h.record.id), h.score)
                for h in one.recall("coral reef", 12, touch=False, rank=rank)
            ]
            assert got == want
        assert wrapped.phase2[:2] == [True, False]  # the first phase 2 refused, the rerun scored
    one.datastore.close()
    server = ShardServer(0, tmp_path / "sh" / "shard-0000", durable=False)
    try:
        stats = server.lex_stats(np.array([1, 2], np.uint64))
        server.retire([int(server.memory.view().mirror.row_id[0])])
        from sentient_core.cluster.wire import CorpusStats, LexQuery

        q = LexQuery(terms=np.array([1], np.uint64), weights=np.ones(1), df=np.ones(1, np.int64))
        corpus = CorpusStats(n_docs=10.0, avgdl=3.0)
        assert server.search_lexical([q], 3, "bm25", corpus, stats.n, stats.generation) is None
        assert server.search_lexical([q], 3, "bm25", corpus, stats.n) is not None
    finally:
        server.close()


def test_read_only_shards_refuse_touch(tmp_path):
    with ShardedMemory.open_local(tmp_path / "ro", 2, code_dim=32, durable=False) as mem:
        mem.store("basalt quartz", shard=1)
    shards = LocalShards.open(tmp_path / "ro", 2, readonly=True)
    with ShardedMemory(shards) as ro:
        with pytest.raises(StoreUsageError):
            ro.recall("basalt", 3)
        assert [h.record.text for h in ro.recall("basalt", 3, touch=False)] == ["basalt quartz"]


def test_empty_and_bad_queries(tmp_path):
    with ShardedMemory.open_local(tmp_path / "e", 2, code_dim=16, durable=False) as mem:
        assert mem.recall("anything", 5, touch=False) == []
        assert mem.recall(np.ones(16, np.float32), 5, touch=False) == []
        mem.store("one trace here")
        assert mem.recall("", 5, touch=False) == []
        with pytest.raises(ArgumentError):
            mem.recall(np.zeros(16, np.float32), 5)
        with pytest.raises(ArgumentError):
            mem.recall(np.ones(8, np.float32), 5)
        with pytest.raises(ArgumentError):
            mem.recall(np.ones(16, np.float32), 5, rank="bm25")
        with pytest.raises(ArgumentError):
            mem.recall("x", 0)
        with pytest.raises(ArgumentError):
            mem.recall_batch(np.zeros((2, 16), np.float32), 3)


def test_servers_must_be_listed_by_shard_and_agree_on_code_dim(tmp_path):
    a = ShardServer(0, tmp_path / "a", code_dim=16, durable=False)
    b = ShardServer(1, tmp_path / "b", code_dim=32, durable=False)
    try:
        with pytest.raises(ArgumentError):
            LocalShards([b, a])
        with pytest.raises(ArgumentError, match="different lengths"):
            ShardedMemory(LocalShards([a, b]))
        with pytest.raises(ArgumentError):
            LocalShards([])
    finally:
        a.close()
        b.close()


def test_global_ids_pack_and_check_their_bounds():
    assert ids.SHARD_BITS + ids.LOCAL_BITS == 63
    rng = np.random.default_rng(0)
    shards = rng.integers(0, ids.MAX_SHARDS, size=100)
    local = rng.integers(0, ids.MAX_LOCAL, size=100, dtype=np.int64)
    for s, loc in zip(shards.tolist(), local.tolist(), strict=True):
        g = ids.pack(s, loc)
        assert 0 <= g < 2**63 and ids.shard_of(g) == s and ids.local_of(g) == loc
    packed = ids.pack_many(7, local)
    assert packed.dtype == np.int64
    back_s, back_l = ids.unpack_many(packed)
    assert (back_s == 7).all() and (back_l == local).all()
    assert ids.pack(0, 12345) == 12345  # shard 0 keeps the store's own ids
    # Order: by shard, then local id.
    assert ids.pack(1, 0) > ids.pack(0, ids.MAX_LOCAL)
    with pytest.raises(ArgumentError, match="47 bits"):
        ids.pack(3, ids.MAX_LOCAL + 1)
    with pytest.raises(ArgumentError, match="47 bits"):
        ids.pack_many(3, np.array([1, ids.MAX_LOCAL + 1]))
    with pytest.raises(ArgumentError, match="16 bits"):
        ids.pack(ids.MAX_SHARDS, 0)
    with pytest.raises(ArgumentError):
        ids.pack(-1, 0)
    with pytest.raises(ArgumentError):
        ids.shard_of(-5)
    with pytest.raises(ArgumentError):
        ids.unpack_many(np.array([-1]))


def test_the_bench_script_runs_and_checks_its_answers(monkeypatch, capsys):
    # bench/cluster_local.py at 400 traces: it asserts every layout's answers equal one memory's.
    from bench import cluster_local

    monkeypatch.setattr(cluster_local, "prefer_passive_threads", lambda: False)
    argv = ["--n", "400", "--rounds", "1", "--queries", "4", "--shards", "1", "2"]
    assert cluster_local.main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("2 shards") == 7 and "µs/query" in out  # 3 ranks x 2 + scored


def test_readers_in_threads_while_the_writer_stores(tmp_path):
    """Recalls from other threads run during the writes; the writer still reads its own."""
    import threading

    mem = ShardedMemory.open_local(tmp_path / "thr", 2, code_dim=32, durable=False)
    stop = threading.Event()
    errors: list[BaseException] = []
    seen = [0, 0]

    def reader(slot: int, rank: str) -> None:
        try:
            while not stop.is_set():
                hits = mem.recall("harbour note", 5, touch=False, rank=rank)
                assert all(not h.record.retired for h in hits)
                assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
                seen[slot] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=reader, args=(i, r)) for i, r in enumerate(("bm25", "hybrid"))
    ]
    with mem:
        for t in threads:
            t.start()
        misses = 0
        try:
            for i in range(120):
                rec = mem.store(f"harbour note tag{i}z", shard=i % 2, primes=())
                hits = mem.recall(f"tag{i}z", 1, touch=False, rank="bm25")
                misses += not hits or hits[0].record.id != rec.id
                if i % 40 == 39:
                    mem.retire([rec.id])
        finally:
            stop.set()
            for t in threads:
                t.join()
    assert errors == [] and misses == 0
    assert min(seen) > 0
