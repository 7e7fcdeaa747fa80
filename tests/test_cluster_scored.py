"""The learned scorer's recall over shards equals one memory's (sentient_core.cluster.scored).

The same traces (three kinds of source, varied importance, texts repeated across
shards) are stored in one memory with its meta-memory and in 1, 2 and 3 shards of
very different sizes with a meta-memory owner of their own (its own store); both
meta-memories see the same evidence (a source distrusted in domain "d"), and a
few traces are retired in both. Over >= 200 queries (texts with and without a
domain, codes) and several k, the sharded scored recall returns the same traces
in the same order with the same scores, cosines, BM25 parts and factor
contributions, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from sentient_core.cluster import ShardedMemory, ShardServer
from sentient_core.cluster.scored import ShardedScoredRecall
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.metamemory import MetaMemory, SurpriseBasis, make_event
from sentient_core.metamemory.credit_records import CREDITS, FLOORS, CreditRecord, FloorRecord
from sentient_core.metamemory.recall import ScoredRecall
from sentient_core.store import Store

DIM = 64
N = 300
T0 = 1_700_000_000.0
SOURCES = ["llm:127.0.0.1/m", "local:/c/a.txt", "web:docs.python.org"]
WORDS = [
    *("tide", "moon", "orbit", "gravity", "ocean", "wave", "salt", "reef", "coral", "kelp"),
    *("storm", "wind", "sail", "harbour", "anchor", "compass", "chart", "island", "current"),
    *("python", "module", "function", "import", "class", "socket", "thread", "parser"),
]
LAYOUTS = {1: [1.0], 2: [0.9, 0.1], 4: [0.05, 0.6, 0.0, 0.35]}  # 4: one shard empty


def _clock() -> float:
    return T0


def _items() -> list[NewTrace]:
    rng = np.random.default_rng(4)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 16)))) for _ in range(N)]
    for i in rng.integers(N // 2, N, size=N // 10):
        texts[i] = texts[int(rng.integers(0, N // 2))]  # cross-shard ties
    return [
        NewTrace(text=t, source=SOURCES[i % 3], importance=(i % 5) / 5, primes=())
        for i, t in enumerate(texts)
    ]


CREDITED = [3, 100, 250]  # evidence against them (the "surprise" factor)
SUPERSEDED = [20, 160]  # active, but vetoed: not the scorer's candidates (nor in its df)


def _evidence(store: Store, trace_ids: list[int]) -> None:
    """Credit and floor records about traces (by the ids this meta-memory knows them by)."""

    def write(txn):
        for i in CREDITED:
            CREDITS.put(
                txn,
                CreditRecord(
                    trace=trace_ids[i], row=0, credit=-0.5, streak=4, last_dir=-1, events=4,
                    updated=T0,
                ),
            )  # fmt: skip
        for i in SUPERSEDED:
            FLOORS.put(
                txn,
                FloorRecord(
                    trace=trace_ids[i], superseded_by=-1, reason="t", surprise_ids=(),
                    strength=0.05, time=T0,
                ),
            )  # fmt: skip

    store.write(write)


def _distrust(meta: MetaMemory) -> None:
    for _ in range(4):
        meta.sources.observe(
            make_event(
                context="q",
                action="recall",
                magnitude=1.0,
                basis=SurpriseBasis(rule="t"),
                domain="d",
                source=SOURCES[0],
                cause="disagreement",
                time=T0,
            )
        )


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("scored")
    items = _items()
    retire = [7, 150, 151, 299]
    store = Store.open(root / "single", code_dim=DIM, durable=False)
    one = HolographicMemory(store, clock=_clock)
    one_ids = [r.id for r in one.store_batch(items)]
    one.retire([one_ids[i] for i in retire])
    _evidence(store, one_ids)
    meta = MetaMemory(one, clock=_clock)
    _distrust(meta)
    single = ScoredRecall(one, meta)
    layouts = {}
    for name, fracs in LAYOUTS.items():
        sizes = [round(f * N) for f in fracs[:-1]]
        sizes.append(N - sum(sizes))
        mem = ShardedMemory.open_local(
            root / f"l{name}", len(sizes), code_dim=DIM, durable=False, clock=_clock
        )
        gid = []
        start = 0
        for s, size in enumerate(sizes):
            gid += [r.id for r in mem.store_batch(items[start : start + size], shard=s)]
            start += size
        mem.retire([gid[i] for i in retire])
        owner_store = Store.open(root / f"meta{name}", code_dim=DIM, durable=False)
        _evidence(owner_store, gid)
        owner = MetaMemory(HolographicMemory(owner_store, clock=_clock), clock=_clock)
        _distrust(owner)
        layouts[name] = (ShardedScoredRecall(mem, owner), {g: i for i, g in enumerate(gid)})
        layouts[name] += (mem, owner_store)
    yield single, {sid: i for i, sid in enumerate(one_ids)}, layouts, items, one
    for _, _, mem, owner_store in layouts.values():
        mem.close()
        owner_store.close()
    store.close()


def _key(hits, item_of):
    return [
        (item_of[h.record.id], h.score, h.cosine, h.lexical, h.contributions, h.record.text)
        for h in hits
    ]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_scored_recall_equals_one_memory(world, layout):
    single, item_of_single, layouts, items, _ = world
    sharded, item_of, _, _ = layouts[layout]
    rng = np.random.default_rng(17)
    compared = ties = 0
    for j in range(210):
        k = (1, 5, 12, 40)[j % 4]
        domain = "d" if j % 3 else ""
        now = T0 + float(j % 5) * 3600.0
        if j % 7 == 6:
            q = rng.standard_normal(DIM).astype(np.float32)
        elif j % 2:
            q = items[int(rng.integers(0, N))].text
        else:
            q = " ".join(rng.choice(WORDS, size=int(rng.integers(1, 5))))
        want = _key(single.recall(q, k, domain=domain, now=now), item_of_single)
        got = _key(sharded.recall(q, k, domain=domain, now=now), item_of)
        assert got == want, (q, k, domain)
        compared += 1
        scores = [w[1] for w in want]
        ties += len(scores) - len(set(scores))
    assert compared >= 200 and ties > 20
    # The evidence is in the scores: a credited trace carries its penalty, a superseded
    # one never comes back.
    for i in CREDITED:
        hits = sharded.recall(items[i].text, 40, now=T0)
        mine = [h for h in hits if item_of[h.record.id] == i]
        assert mine and mine[0].contributions["surprise"] < 0
    for i in SUPERSEDED:
        assert i not in [item_of[h.record.id] for h in sharded.recall(items[i].text, 40, now=T0)]
    # The distrusted source weighs less in domain "d" (the evidence reached both owners).
    hit = sharded.recall(items[0].text, 1, domain="d", now=T0)[0]
    plain = sharded.recall(items[0].text, 1, domain="other", now=T0)[0]
    assert hit.record.source == SOURCES[0] and plain.record.source == SOURCES[0]
    assert hit.contributions["source_weight"] < plain.contributions["source_weight"]


def test_a_restarted_shard_server_gets_its_scorer_table_again(world):
    # What a Ray actor restart does: a new server object over the same directory, without
    # the table the recall prepared in the old one (its incarnation tells them apart).
    single, item_of_single, layouts, items, _ = world
    sharded, item_of, mem, _ = layouts[2]
    q = items[40].text
    want = _key(single.recall(q, 12, now=T0), item_of_single)
    assert _key(sharded.recall(q, 12, now=T0), item_of) == want
    old = mem.shards.server(1)
    old.close()
    mem.shards._servers[1] = ShardServer(1, old.store.path, clock=_clock)
    assert mem.shards.server(1).incarnation != old.incarnation
    assert _key(sharded.recall(q, 12, now=T0), item_of) == want


def test_hits_explain_and_touch_go_by_global_id(world):
    # Runs after the comparisons above (it bumps use counts in the 4-shard layout).
    single, item_of_single, layouts, items, _ = world
    sharded, item_of, mem, _ = layouts[4]
    q = items[200].text
    want = [item_of_single[h.record.id] for h in single.hits(q, 5)]
    assert [item_of[h.record.id] for h in sharded.hits(q, 5)] == want
    hits = sharded.recall(q, 5, now=T0)
    rows = sharded.explain(q, 5, now=T0)
    assert [r["id"] for r in rows] == [h.record.id for h in hits]
    for r in rows:  # the contributions add up to the score
        assert sum(r["contributions"].values()) == pytest.approx(r["score"], rel=0, abs=1e-9)
    touched = sharded.hits(q, 3, touch=True)
    assert touched and all(mem.get(h.record.id).use_count == 1 for h in touched)
