"""Holographic memory over a real LMDB store (tmp_path): storing, recall by code,
SMF and primes, touch counters, links and spreading activation, decay, pruning,
restart identity, failed writes, another process reading while we write, threads."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import msgspec
import numpy as np
import pytest

from sentient_core.encoder import get_encoder
from sentient_core.memory import (
    STRENGTH_FLOOR,
    EncoderMismatchError,
    HolographicMemory,
    NewTrace,
    PrunePolicy,
    RetiredTraceError,
    UnknownTraceError,
)
from sentient_core.store import Store, StoreUsageError, check_integrity, codes, links, traces

REPO = Path(__file__).resolve().parents[1]
DIM = 256
T0 = 1_700_000_000.0
DAY = 86400.0


class Clock:
    """A settable clock (unix seconds) that advances by ``step`` at every call."""

    def __init__(self, t: float = T0, step: float = 0.0) -> None:
        self.t = t
        self.step = step

    def __call__(self) -> float:
        now = self.t
        self.t += self.step
        return now


def random_texts(n: int, seed: int, words: int = 10) -> list[str]:
    """Distinct texts of random made-up words (no stop words, nothing in common by design)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, size=7)) for _ in range(4000)]
    out: list[str] = []
    while len(out) < n:
        text = " ".join(rng.choice(vocab, size=words, replace=False))
        if text not in out:
            out.append(text)
    return out


def unit_rows(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store", code_dim=DIM) as s:
        yield s


@pytest.fixture
def clock():
    return Clock(step=1.0)


@pytest.fixture
def memory(store, clock):
    return HolographicMemory(store, clock=clock)


def stored_code(store: Store, row: int) -> np.ndarray:
    with store.read() as txn:
        return codes.read_row(txn, row)


def hit_key(hits) -> list[tuple[int, str, int]]:
    return [(h.record.id, float(h.score).hex(), h.row) for h in hits]


def mirror_snapshot(mem: HolographicMemory) -> tuple:
    """Everything the mirror holds, as bytes (white-box: a failed write must not change it)."""
    view = mem.view()
    m, n = view.mirror, view.n
    arrays = (
        m.codes[:n],
        m.valid[:n],
        m.row_id[:n],
        m.smf[:n],
        m.created[:n],
        m.last_access[:n],
        m.strength[:n],
        m.importance[:n],
    )
    index = sorted((p, post.rows.tobytes()) for p, post in view.primes.postings.items())
    next_id = mem._w.next_id  # white-box: the writer's own counter
    return (n, m.active, next_id, view.generation, *(a.tobytes() for a in arrays), index)


# ----------------------------------------------------------------------------- storing


def test_store_one_keeps_text_primes_and_a_unit_code(memory, store, clock):
    text = "Photosynthesis converts light energy into chemical energy in chloroplasts"
    rec = memory.store(text, source="biology.txt", topic="plants", tags=("bio",))
    enc = get_encoder("token", code_dim=DIM).encode(text)
    assert (rec.id, rec.row, rec.text, rec.source, rec.topic, rec.tags) == (
        0,
        0,
        text,
        "biology.txt",
        "plants",
        ("bio",),
    )
    assert rec.primes == enc.dominant_primes and len(rec.primes) > 0
    assert rec.created == rec.last_access == T0
    code = stored_code(store, rec.row)
    assert np.linalg.norm(code.astype(np.float64)) == pytest.approx(1.0, abs=1e-6)
    assert float(code.astype(np.float64) @ enc.code.astype(np.float64)) == pytest.approx(
        1.0, abs=1e-6
    )
    assert memory.get(rec.id) == rec
    assert (memory.count, memory.total) == (1, 1)
    assert check_integrity(store).ok


def test_store_batch_is_one_transaction_and_normalises_given_codes(memory, store, monkeypatch):
    writes = []
    real_write = store.write
    monkeypatch.setattr(store, "write", lambda fn: writes.append(1) or real_write(fn))
    raw = np.arange(1, DIM + 1, dtype=np.float32)  # norm far from 1
    items = [
        NewTrace(text="given code", code=raw, primes=(7, 3, 7, 5), smf=tuple(np.eye(16)[3])),
        NewTrace(text="no primes at all", primes=()),
        NewTrace(text="encoder makes code and primes", importance=0.9, kind="learned"),
    ]
    recs = memory.store_batch(items)
    assert len(writes) == 1
    assert [r.id for r in recs] == [0, 1, 2] and [r.row for r in recs] == [0, 1, 2]
    assert recs[0].primes == (7, 3, 5)  # duplicates dropped, order kept
    assert recs[1].primes == ()
    assert recs[0].smf == tuple(np.eye(16)[3])
    assert recs[1].smf[0] == 1.0 and not any(recs[1].smf[1:])  # e0 by default
    assert (recs[2].importance, recs[2].kind) == (0.9, "learned")
    code = stored_code(store, 0).astype(np.float64)
    expected = raw.astype(np.float64) / np.linalg.norm(raw.astype(np.float64))
    np.testing.assert_allclose(code, expected, atol=1e-7)
    assert memory.store_batch([]) == [] and len(writes) == 1


@pytest.mark.parametrize(
    ("item", "error"),
    [
        (NewTrace(text="x", code=np.ones(DIM + 1, np.float32)), ValueError),
        (NewTrace(text="x", code=np.full(DIM, np.nan, np.float32)), ValueError),
        (NewTrace(text="x", importance=1.5), ValueError),
        (NewTrace(text="x", kind=""), ValueError),
        (NewTrace(text="x", primes=(1, 2)), ValueError),
        (NewTrace(text="x", smf=(1.0, 0.0)), ValueError),
        ("not a NewTrace", TypeError),
    ],
)
def test_store_batch_rejects_bad_items_and_stores_nothing(memory, store, item, error):
    good = NewTrace(text="a perfectly fine trace")
    with pytest.raises(error):
        memory.store_batch([good, item])
    assert (memory.count, memory.total) == (0, 0)
    with store.read() as txn:
        assert txn.counters().trace_count == 0


# ----------------------------------------------------------------------------- recall


def test_recall_ranks_the_distinctive_text_first(memory):
    texts = random_texts(60, seed=1)
    target = (
        "The mitochondria oxidise pyruvate in the citric acid cycle and feed the"
        " electron transport chain that makes ATP"
    )
    texts.insert(37, target)
    recs = memory.store_batch([NewTrace(text=t) for t in texts])
    hits = memory.recall("pyruvate citric acid cycle electron transport", k=5, touch=False)
    assert hits[0].record.id == recs[37].id
    assert hits[0].score > 0.3
    assert all(h.score < hits[0].score for h in hits[1:])
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_recall_equals_brute_force_cosine_over_the_stored_codes(memory, store):
    vecs = np.random.default_rng(2).standard_normal((300, DIM)).astype(np.float32) * 3.0
    memory.store_batch([NewTrace(text=f"t{i}", code=v, primes=()) for i, v in enumerate(vecs)])
    memory.retire([5, 17])
    with store.read() as txn:
        matrix = codes.read_all(txn).astype(np.float64)
    queries = np.random.default_rng(3).standard_normal((6, DIM)).astype(np.float32)
    batch = memory.recall_batch(queries, k=8, touch=False)
    for q, got_batch in zip(queries, batch, strict=True):
        q64 = q.astype(np.float64)
        cos = matrix @ q64 / np.linalg.norm(q64)
        cos[[5, 17]] = -np.inf
        want = np.argsort(-cos, kind="stable")[:8]
        got = memory.recall(q, k=8, touch=False)
        assert [h.record.id for h in got] == want.tolist()
        np.testing.assert_allclose([h.score for h in got], cos[want], atol=1e-12)
        assert hit_key(got_batch) == hit_key(got)


def test_recall_threshold_drops_low_scores(memory):
    vecs = unit_rows(40, seed=4)
    memory.store_batch([NewTrace(text=f"t{i}", code=v, primes=()) for i, v in enumerate(vecs)])
    query = vecs[9] + 0.3 * vecs[10]
    all_hits = memory.recall(query, k=40, threshold=-1.0, touch=False)
    assert len(all_hits) == 40
    cut = all_hits[3].score
    hits = memory.recall(query, k=40, threshold=cut, touch=False)
    assert [h.record.id for h in hits] == [h.record.id for h in all_hits[:4]]
    assert all(h.score >= cut for h in hits)
    assert memory.recall(query, k=40, threshold=1.01, touch=False) == []
    default = memory.recall(query, k=40, touch=False)  # threshold 0: no negative cosines
    assert default and all(h.score >= 0.0 for h in default)
    assert len(default) == sum(h.score >= 0.0 for h in all_hits)


def test_text_without_content_words_recalls_nothing(memory):
    memory.store("glaciers carve deep valleys")
    assert memory.recall("the and of it", touch=False) == []
    assert memory.recall_batch(["of the", "glaciers valleys"], k=1, touch=False)[0] == []
    with pytest.raises(ValueError, match="all zeros"):
        memory.recall(np.zeros(DIM, np.float32), touch=False)


def test_recall_on_an_empty_memory_returns_nothing(memory):
    assert memory.recall("anything at all", touch=False) == []
    assert memory.recall_by_smf(np.eye(16)[0], touch=False) == []
    assert memory.recall_by_primes([2, 3], touch=False) == []
    assert memory.recent(5) == []


def test_recall_bumps_use_count_and_last_access_never_efficacy(memory, store, clock):
    recs = memory.store_batch([NewTrace(text=t) for t in random_texts(5, seed=5)])
    judged = msgspec.structs.replace(recs[2], success_count=3, failure_count=2)
    memory.update([judged])
    clock.t, clock.step = T0 + 500.0, 0.0
    hits = memory.recall(recs[2].text, k=2, threshold=-1.0)
    top = memory.get(recs[2].id)
    assert hits[0].record == top
    assert (top.use_count, top.last_access) == (1, T0 + 500.0)
    assert (top.success_count, top.failure_count) == (3, 2)
    other = memory.get(hits[1].record.id)
    assert other.use_count == 1 and other.success_count == other.failure_count == 0
    untouched = [memory.get(r.id) for r in recs if r.id not in {h.record.id for h in hits}]
    assert all(r.use_count == 0 and r.last_access == T0 for r in untouched)
    # touch=False changes nothing
    memory.recall(recs[2].text, k=2, touch=False)
    assert memory.get(recs[2].id) == top
    # a batch bumps once per query that returned the trace, in one transaction
    clock.t = T0 + 900.0
    memory.recall_batch([recs[2].text, recs[2].text, recs[4].text], k=1)
    after = memory.get(recs[2].id)
    assert (after.use_count, after.last_access) == (3, T0 + 900.0)
    assert (after.success_count, after.failure_count) == (3, 2)
    assert memory.get(recs[4].id).use_count == 1


def test_recall_by_smf_ranks_by_orientation_cosine(memory):
    rng = np.random.default_rng(6)
    fields = rng.standard_normal((30, 16))
    recs = memory.store_batch(
        [NewTrace(text=f"t{i}", smf=tuple(f), primes=()) for i, f in enumerate(fields)]
    )
    query = fields[12] + 0.05 * rng.standard_normal(16)
    hits = memory.recall_by_smf(query, k=6, touch=False)
    cos = fields @ query / (np.linalg.norm(fields, axis=1) * np.linalg.norm(query))
    want = np.argsort(-cos, kind="stable")[:6]
    assert [h.record.id for h in hits] == [recs[i].id for i in want]
    np.testing.assert_allclose([h.score for h in hits], cos[want], rtol=0, atol=1e-12)
    assert hits[0].record.id == recs[12].id
    memory.retire([recs[12].id])
    assert recs[12].id not in [h.record.id for h in memory.recall_by_smf(query, k=30, touch=False)]
    assert len(memory.recall_by_smf(query, k=100, touch=False)) == 29


def test_recall_by_primes_ranks_by_overlap_then_recency(memory, clock):
    layout = [
        (2, 3, 5),  # 0: overlap 2 with (3, 5, 7)
        (3, 5, 7),  # 1: overlap 3
        (11, 13),  # 2: none
        (5, 7, 11),  # 3: overlap 2, newer than 0
        (7,),  # 4: overlap 1
        (3, 5, 7, 11),  # 5: overlap 3, newer than 1
    ]
    recs = [memory.store(f"t{i}", primes=p) for i, p in enumerate(layout)]
    hits = memory.recall_by_primes([7, 5, 3, 3], k=10, touch=False)
    assert [h.record.id for h in hits] == [recs[i].id for i in (5, 1, 3, 0, 4)]
    assert [h.score for h in hits] == [1.0, 1.0, 2 / 3, 2 / 3, 1 / 3]
    assert [h.record.id for h in memory.recall_by_primes([3, 5, 7], k=2, touch=False)] == [
        recs[5].id,
        recs[1].id,
    ]
    assert memory.recall_by_primes([97], touch=False) == []
    memory.retire([recs[5].id])
    assert [h.record.id for h in memory.recall_by_primes([3, 5, 7], k=1, touch=False)] == [
        recs[1].id
    ]


# ----------------------------------------------------------------------------- links


def test_links_undirected_and_directed(memory):
    a, b, c = (memory.store(t).id for t in random_texts(3, seed=7))
    written = memory.link(a, b, 0.8)
    assert {(x.src, x.dst, x.weight) for x in written} == {(a, b, 0.8), (b, a, 0.8)}
    memory.link(b, c, 0.5, directed=True)
    assert [(x.dst, x.weight) for x in memory.links(b)] == [(a, 0.8), (c, 0.5)]
    assert memory.links(c) == []
    assert memory.unlink(a, b) == 2 and memory.links(a) == []
    with pytest.raises(ValueError, match="itself"):
        memory.link(a, a)
    with pytest.raises(ValueError, match="weight"):
        memory.link(a, b, 1.5)
    with pytest.raises(UnknownTraceError, match="999"):
        memory.link(a, 999)
    with pytest.raises(UnknownTraceError):
        memory.links(999)


def test_spread_activation_by_hand(memory):
    n0, n1, n2, n3, n4 = (memory.store(t).id for t in random_texts(5, seed=8))
    memory.link(n0, n1, 0.8)  # both directions
    memory.link(n1, n2, 0.5, directed=True)
    memory.link(n0, n3, 0.4, directed=True)
    memory.link(n2, n4, 1.0, directed=True)
    # hop 1 from n0: n1 = 0.5·0.8 = 0.4, n3 = 0.5·0.4 = 0.2
    # hop 2: from n1 (0.4): n0 += 0.4·0.5·0.8 (seed, not listed), n2 = 0.4·0.5·0.5 = 0.1
    assert memory.spread([n0], hops=1) == [(n1, pytest.approx(0.4)), (n3, pytest.approx(0.2))]
    two = memory.spread([n0], hops=2)
    assert [i for i, _ in two] == [n1, n3, n2]
    np.testing.assert_allclose([a for _, a in two], [0.4, 0.2, 0.1], rtol=1e-15)
    three = dict(memory.spread([n0], hops=3, decay=0.5))
    # hop 3: n0 (0.16) → n1 += 0.16·0.5·0.8, n3 += 0.16·0.5·0.4; n2 (0.1) → n4 = 0.1·0.5·1.0
    np.testing.assert_allclose(
        [three[n1], three[n3], three[n2], three[n4]], [0.464, 0.232, 0.1, 0.05], rtol=1e-14
    )
    assert memory.spread([n0], hops=3, limit=2) == memory.spread([n0], hops=3)[:2]
    assert memory.spread([n0], hops=0) == []
    # two seeds: n1 gets 0.5·0.8 from n0 and n0 gets it back, both are seeds and not listed
    both = memory.spread([n0, n1], hops=1)
    assert [i for i, _ in both] == [n2, n3]
    np.testing.assert_allclose([a for _, a in both], [0.25, 0.2], rtol=1e-15)
    with pytest.raises(UnknownTraceError):
        memory.spread([12345])


# ----------------------------------------------------------------------------- recent


def test_recent_is_newest_first_and_skips_retired(memory):
    recs = memory.store_batch([NewTrace(text=t) for t in random_texts(8, seed=9)])
    assert [r.id for r in memory.recent(3)] == [7, 6, 5]
    memory.retire([6])
    assert [r.id for r in memory.recent(3)] == [7, 5, 4]
    assert [r.id for r in memory.recent(100)] == [7, 5, 4, 3, 2, 1, 0]
    assert memory.recent(1)[0] == memory.get(recs[7].id)


# ----------------------------------------------------------------------------- decay


def test_decay_follows_the_half_life_formula_and_composes(memory, clock):
    clock.step = 0.0
    a, b = memory.store_batch([NewTrace(text=t) for t in random_texts(2, seed=10)])
    memory.update([msgspec.structs.replace(a, success_count=4, failure_count=1)])
    assert memory.decay(now=T0 + 30 * DAY, half_life_days=30.0) == 2
    # s = 0.05 + (1 - 0.05) · 2^(-30/30)
    assert memory.get(a.id).strength == pytest.approx(0.525, rel=1e-12)
    assert memory.get(b.id).strength == pytest.approx(0.525, rel=1e-12)
    clock.t = T0 + 45 * DAY
    memory.recall(b.text, k=1)  # b is used at day 45
    assert memory.decay(now=T0 + 60 * DAY, half_life_days=30.0) == 2
    # a: one more half-life since the last decay = one decay over 60 days
    assert memory.get(a.id).strength == pytest.approx(0.05 + 0.95 * 0.25, rel=1e-12)
    # b: 15 days since its use
    assert memory.get(b.id).strength == pytest.approx(0.05 + 0.475 * 2**-0.5, rel=1e-12)
    assert memory.decay(now=T0 + 60 * DAY, half_life_days=30.0) == 0
    memory.decay(now=T0 + 10_000 * DAY, half_life_days=30.0)
    floor = memory.get(a.id)
    assert STRENGTH_FLOOR <= floor.strength < STRENGTH_FLOOR + 1e-9
    assert (floor.success_count, floor.failure_count) == (4, 1)
    assert memory.get(b.id).success_count == memory.get(b.id).failure_count == 0
    with pytest.raises(ValueError):
        memory.decay(half_life_days=0.0)


def test_decay_survives_a_restart(tmp_path):
    path = tmp_path / "s"
    with Store.open(path, code_dim=DIM) as st:
        mem = HolographicMemory(st, clock=Clock())
        rec = mem.store("a trace that decays")
        mem.decay(now=T0 + 30 * DAY)
    with Store.open(path) as st:
        mem = HolographicMemory(st)
        assert mem.decay(now=T0 + 60 * DAY) == 1  # measured from the stored last decay
        assert mem.get(rec.id).strength == pytest.approx(0.05 + 0.95 * 0.25, rel=1e-12)


# ----------------------------------------------------------------------------- prune


STRENGTHS = [0.06, 0.09, 0.5, 0.05, 0.07, 0.9, 0.08, 0.095, 1.2, 0.051, 0.3, 0.099, 0.6, 0.052, 0.7]


def build_prunable(memory: HolographicMemory) -> list:
    rng = np.random.default_rng(11)
    texts = random_texts(20, seed=12)
    recs = memory.store_batch(
        [
            NewTrace(text=t, primes=(2, 3, 101 + i), smf=tuple(rng.standard_normal(16)))
            for i, t in enumerate(texts)
        ]
    )
    # ids 0..14 get the strengths above; the 5 newest are the weakest of all
    weights = [*STRENGTHS, 0.05, 0.05, 0.05, 0.05, 0.05]
    memory.update(
        [msgspec.structs.replace(r, strength=s) for r, s in zip(recs, weights, strict=True)]
    )
    memory.link(0, 19)
    memory.link(3, 4)
    memory.link(5, 18)
    memory.link(9, 5, directed=True)
    return recs


def test_prune_retires_weakest_beyond_cap_never_the_newest(memory, store):
    recs = build_prunable(memory)
    retired = memory.prune(PrunePolicy(max_active=12, keep_newest=5, min_strength=0.1))
    # 9 eligible (< 0.1, ids 0..14); the 8 weakest go, id 11 (0.099) stays
    assert retired == [0, 1, 3, 4, 6, 7, 9, 13]
    assert memory.count == 12 and memory.total == 20
    gone = set(retired)
    for r in recs:
        assert memory.get(r.id).retired == (r.id in gone)
    report = check_integrity(store)
    assert report.ok, report.problems
    with store.read() as txn:
        pairs = [(x.src, x.dst) for x in links.iter_from(txn)]
    assert sorted(pairs) == [(5, 18), (18, 5)]
    for r in recs:
        if r.id in gone:
            ids = [h.record.id for h in memory.recall(r.text, k=20, touch=False)]
            assert r.id not in ids
    assert gone.isdisjoint(r.id for r in memory.recent(20))
    assert gone.isdisjoint(h.record.id for h in memory.recall_by_primes([2, 3], k=50, touch=False))
    assert gone.isdisjoint(
        h.record.id for h in memory.recall_by_smf(np.eye(16)[0], k=50, touch=False)
    )
    assert memory.spread([19]) == []
    with pytest.raises(RetiredTraceError):
        memory.link(0, 2)
    assert memory.prune(PrunePolicy(max_active=12, keep_newest=5, min_strength=0.1)) == []
    # a reopened memory agrees
    again = HolographicMemory(store)
    assert (again.count, again.total) == (12, 20)
    assert [r.id for r in again.recent(20)] == [r.id for r in memory.recent(20)]


def test_prune_ties_go_to_the_least_recently_used(memory, clock):
    recs = memory.store_batch([NewTrace(text=t) for t in random_texts(4, seed=13)])
    memory.update(
        [
            msgspec.structs.replace(recs[0], strength=0.06, last_access=T0 + 50),
            msgspec.structs.replace(recs[1], strength=0.06, last_access=T0 + 10),
            msgspec.structs.replace(recs[2], strength=0.06, last_access=T0 + 30),
        ]
    )
    assert memory.prune(PrunePolicy(max_active=2, keep_newest=1)) == [1, 2]


def test_a_count_cap_never_retires_strong_traces(memory):
    memory.store_batch([NewTrace(text=t) for t in random_texts(10, seed=14)])
    assert memory.prune(PrunePolicy(max_active=3, keep_newest=0)) == []
    assert memory.count == 10
    assert memory.prune(PrunePolicy(max_active=3, keep_newest=2, min_strength=math.inf)) == list(
        range(7)
    )
    assert [r.id for r in memory.recent(10)] == [9, 8, 7]
    with pytest.raises(ValueError, match="PrunePolicy"):
        memory.prune(PrunePolicy(max_active=-1))


# ----------------------------------------------------------------------------- restart


def test_recall_after_a_restart_is_bit_identical(tmp_path):
    path = tmp_path / "s"
    texts = random_texts(200, seed=15)
    queries = [" ".join(t.split()[:4]) for t in texts[::17]]
    rng = np.random.default_rng(16)
    with Store.open(path, code_dim=DIM) as st:
        mem = HolographicMemory(st, clock=Clock(step=1.0))
        recs = mem.store_batch(
            [NewTrace(text=t, smf=tuple(rng.standard_normal(16))) for t in texts]
        )
        mem.retire([recs[3].id, recs[34].id])
        mem.link(recs[0].id, recs[1].id, 0.7)
        before = [hit_key(mem.recall(q, k=7, touch=False)) for q in queries]
        before_smf = hit_key(mem.recall_by_smf(np.arange(16.0), k=9, touch=False))
        before_primes = hit_key(mem.recall_by_primes(recs[5].primes, k=9, touch=False))
        before_spread = mem.spread([recs[0].id])
    with Store.open(path, readonly=True) as st:
        mem = HolographicMemory(st)
        assert [hit_key(mem.recall(q, k=7, touch=False)) for q in queries] == before
        assert hit_key(mem.recall_by_smf(np.arange(16.0), k=9, touch=False)) == before_smf
        assert hit_key(mem.recall_by_primes(recs[5].primes, k=9, touch=False)) == before_primes
        assert mem.spread([recs[0].id]) == before_spread
        assert (mem.count, mem.total) == (198, 200)


# ----------------------------------------------------------------------------- failures


def test_a_failed_store_batch_leaves_mirror_and_store_unchanged(memory, store, monkeypatch):
    memory.store_batch([NewTrace(text=t) for t in random_texts(10, seed=17)])
    snap = mirror_snapshot(memory)
    query_hits = hit_key(memory.recall("anything", k=3, touch=False))
    real = traces.append

    def put_then_fail(txn, records, codes_, **kw):
        real(txn, records, codes_, **kw)
        raise RuntimeError("injected failure after the puts")

    monkeypatch.setattr(traces, "append", put_then_fail)
    with pytest.raises(RuntimeError, match="injected"):
        memory.store_batch([NewTrace(text=t) for t in random_texts(5, seed=18)])
    assert mirror_snapshot(memory) == snap
    assert hit_key(memory.recall("anything", k=3, touch=False)) == query_hits
    with store.read() as txn:
        assert txn.counters().trace_count == 10
    monkeypatch.undo()
    assert memory.store("after the failure").id == 10
    assert check_integrity(store).ok


def test_failed_touch_retire_decay_leave_mirror_unchanged(memory, store, monkeypatch, clock):
    recs = memory.store_batch([NewTrace(text=t) for t in random_texts(6, seed=19)])
    memory.link(recs[0].id, recs[1].id)
    snap = mirror_snapshot(memory)
    real = traces.update
    calls = []

    def update_then_fail(txn, record):
        calls.append(record.id)
        real(txn, record)
        if len(calls) >= 2:
            raise RuntimeError("injected failure in the transaction")

    monkeypatch.setattr(traces, "update", update_then_fail)
    with pytest.raises(RuntimeError):
        memory.recall(recs[0].text, k=3, threshold=-1.0)
    calls.clear()
    with pytest.raises(RuntimeError):
        memory.retire([recs[0].id, recs[1].id])
    calls.clear()
    with pytest.raises(RuntimeError):
        memory.decay(now=T0 + 40 * DAY)
    assert mirror_snapshot(memory) == snap
    monkeypatch.undo()
    assert all(memory.get(r.id) == r for r in recs)
    assert len(memory.links(recs[0].id)) == 1
    assert HolographicMemory(store).generation == 0


def test_a_write_that_grows_the_map_is_mirrored_once(tmp_path):
    with Store.open(tmp_path / "s", code_dim=DIM, map_size=1 << 18) as st:
        mem = HolographicMemory(st)
        vecs = unit_rows(600, seed=20)  # 600 KB of codes: several map doublings
        mem.store_batch([NewTrace(text=f"t{i}", code=v, primes=(2,)) for i, v in enumerate(vecs)])
        assert st.map_grows >= 1
        assert (mem.count, mem.total) == (600, 600)
        fresh = HolographicMemory(st)
        assert mirror_snapshot(fresh) == mirror_snapshot(mem)
        assert len(mem.recall_by_primes([2], k=1000, touch=False)) == 600


def test_update_refuses_identity_and_content_changes(memory):
    rec = memory.store("an immutable text")
    for change in ({"text": "other"}, {"primes": (2,)}, {"retired": True}, {"created": 5.0}):
        with pytest.raises(ValueError, match=next(iter(change))):
            memory.update([msgspec.structs.replace(rec, **change)])
    with pytest.raises(UnknownTraceError):
        memory.update([msgspec.structs.replace(rec, id=77)])
    assert memory.get(rec.id) == rec


def test_encoder_mismatch_is_refused(tmp_path):
    with Store.open(tmp_path / "s", code_dim=DIM) as st:
        HolographicMemory(st).store("stored with the token encoder")
        other = HolographicMemory(st, encoder=get_encoder("char-compat", code_dim=DIM))
        with pytest.raises(EncoderMismatchError, match="char-compat"):
            other.store("stored with another encoder")
        with pytest.raises(EncoderMismatchError):
            other.recall("token encoder", touch=False)
        other.store("explicit code needs no encoder", code=np.ones(DIM), primes=())
        with pytest.raises(EncoderMismatchError, match="64"):
            HolographicMemory(st, encoder=get_encoder("token", code_dim=64))


def test_a_read_only_store_recalls_but_does_not_touch(tmp_path):
    path = tmp_path / "s"
    with Store.open(path, code_dim=DIM) as st:
        HolographicMemory(st).store("a read only memory about volcanoes")
    with Store.open(path, readonly=True) as st:
        mem = HolographicMemory(st)
        assert mem.recall("volcanoes", touch=False)[0].record.use_count == 0
        with pytest.raises(StoreUsageError, match="touch=False"):
            mem.recall("volcanoes")
        with pytest.raises(StoreUsageError):
            mem.store("cannot write")


# ----------------------------------------------------------------------------- refresh


def test_refresh_picks_up_writes_made_around_this_mirror(store):
    writer = HolographicMemory(store)
    reader = HolographicMemory(store)
    recs = writer.store_batch([NewTrace(text=t) for t in random_texts(12, seed=21)])
    assert reader.total == 0
    assert reader.refresh() == 12
    assert reader.recall(recs[4].text, k=1, touch=False)[0].record.id == recs[4].id
    assert reader.refresh() == 0
    writer.retire([recs[11].id])
    assert reader.count == 12  # not seen yet
    assert reader.refresh() == 0 and reader.generation == writer.generation == 1
    assert reader.count == 11 and [r.id for r in reader.recent(2)] == [10, 9]
    writer.retire([recs[4].id])
    # even before a refresh, a retired hit is dropped when its record is read
    hits = reader.recall(recs[4].text, k=3, threshold=-1.0, touch=False)
    assert len(hits) == 3 and recs[4].id not in [h.record.id for h in hits]
    assert reader.refresh() == 0 and reader.generation == 2
    assert reader.count == 10
    # a memory whose mirror is behind catches up when it writes
    late = reader.store("written through the second memory")
    assert (reader.total, late.id) == (13, 12)
    assert writer.refresh() == 1 and mirror_snapshot(writer) == mirror_snapshot(reader)


CHILD = r"""
import json, sys, time
from sentient_core.store import Store, traces
from sentient_core.memory import HolographicMemory

path, expected = sys.argv[1], int(sys.argv[2])
store = Store.open(path, readonly=True)
mem = HolographicMemory(store)
print("ready", mem.total, flush=True)
errors, seen, checks, rounds = [], [], 0, 0
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    mem.refresh()
    if not seen or seen[-1] != mem.total:
        seen.append(mem.total)
        print("seen", mem.total, flush=True)
    for rec in mem.recent(3):
        hits = mem.recall(rec.text, k=1, touch=False)
        checks += 1
        # (hybrid recall: the score mixes in BM25; the code itself must match)
        if not hits or hits[0].record.id != rec.id or hits[0].cosine < 0.999:
            errors.append([rec.id, [(h.record.id, h.score) for h in hits]])
    rounds += 1
    if mem.total >= expected and mem.generation >= 1:
        break
with store.read() as txn:
    retired = [r for r in traces.iter_range(txn) if r.retired]
leaked = [r.id for r in retired if r.id in [h.record.id for h in mem.recall(r.text, k=5, touch=False)]]
print(json.dumps({"errors": errors, "seen": seen, "checks": checks, "rounds": rounds,
                  "total": mem.total, "count": mem.count, "retired": len(retired), "leaked": leaked}),
      flush=True)
store.close()
"""


@pytest.mark.slow
def test_another_process_recalls_while_we_write(tmp_path):
    path = tmp_path / "s"
    batches, per_batch = 30, 20
    texts = random_texts((batches + 1) * per_batch, seed=22)
    expected = len(texts)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    with Store.open(path, code_dim=DIM) as st:
        mem = HolographicMemory(st)
        mem.store_batch([NewTrace(text=t) for t in texts[:per_batch]])
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), str(expected)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert child.stdout.readline().split()[0] == "ready"
            seen_lines = []
            for b in range(1, batches + 1):
                chunk = texts[b * per_batch : (b + 1) * per_batch]
                mem.store_batch([NewTrace(text=t) for t in chunk])
                if b % 10 == 0:  # let the reader catch up now and then, then keep writing
                    while True:
                        line = child.stdout.readline()
                        assert line, child.stderr.read()
                        seen_lines.append(line)
                        if int(line.split()[1]) >= (b + 1) * per_batch:
                            break
            mem.retire([3, 250, 600])
            out, err = child.communicate(timeout=120)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
    assert child.returncode == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["errors"] == []
    assert summary["leaked"] == []
    assert summary["retired"] == 3
    assert (summary["total"], summary["count"]) == (expected, expected - 3)
    assert len(summary["seen"]) >= 3 and summary["checks"] >= 3
    assert summary["seen"] == sorted(summary["seen"])


def test_threads_recall_while_one_thread_writes(store):
    mem = HolographicMemory(store)
    texts = random_texts(400, seed=23)
    mem.store_batch([NewTrace(text=t) for t in texts[:40]])
    errors: list[BaseException] = []
    done = threading.Event()

    def writer():
        try:
            for b in range(1, 10):
                mem.store_batch([NewTrace(text=t) for t in texts[b * 40 : (b + 1) * 40]])
            mem.retire([1, 2, 3])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            done.set()

    def reader(touch: bool):
        try:
            i = 0
            while not done.is_set() or i < 20:
                t = texts[4 + i % 36]  # ids 1..3 get retired meanwhile
                hits = mem.recall(t, k=3, touch=touch)
                assert hits[0].record.text == t
                assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
                i += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader, args=(touch,)) for touch in (False, True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert (mem.count, mem.total) == (397, 400)
    assert check_integrity(store).ok
