"""Scored recall on a real store: the learned scorer's rank equals a naive Σ w_k f_k over
factor_matrix for every active trace (relevance: the memory's BM25 + cosine hybrid for a
text, the cosine for a code; a text's ``RERANK_POOL`` best, whatever k, then re-ranked with the
relevance factor the mean of the hybrid and the calibrated relevance); contributions add
up to the score; vetoed traces never come back; a contradicted trace from a distrusted
source drops below its old rank."""

from __future__ import annotations

import numpy as np
import pytest

from sentient_core.memory import HolographicMemory
from sentient_core.metamemory import (
    FACTOR_NAMES,
    CreditSignal,
    MetaMemory,
    context_for,
    factor_matrix,
)
from sentient_core.metamemory import recall as recall_module
from sentient_core.metamemory.recall import RERANK_POOL, ScoredRecall
from sentient_core.relevance import TermStats, relevance
from sentient_core.store import Store
from tests.test_memory import random_texts

T0 = 1_700_000_000.0


def _model_disagrees(meta, domain, times=4):
    """``times`` disagreement surprises blaming the model in ``domain``."""
    from sentient_core.metamemory import SurpriseBasis, make_event

    for _ in range(times):
        meta.sources.observe(
            make_event(
                context="q",
                action="recall",
                magnitude=1.0,
                basis=SurpriseBasis(rule="t"),
                domain=domain,
                source="llm:127.0.0.1/m",
                cause="disagreement",
                time=T0,
            )
        )


@pytest.fixture
def parts(tmp_path):
    clock = iter(np.arange(T0, T0 + 10_000, 7.0))
    with Store.open(tmp_path / "s", code_dim=256) as store:
        mem = HolographicMemory(store, clock=lambda: float(next(clock)))
        texts = random_texts(120, seed=3)
        srcs = ["llm:127.0.0.1/m", "local:/c/a.txt", "web:docs.python.org"]
        for i, t in enumerate(texts):
            mem.store(t, source=srcs[i % 3], importance=(i % 5) / 5)
        yield mem, MetaMemory(mem), texts


def _naive(mem, meta, query, k, now, domain, pool_size=RERANK_POOL):
    recs = list(mem.recent(10**6))
    with mem.datastore.read() as txn:
        ctx = context_for(txn, recs, domain=domain, now=now)
    feats, veto = factor_matrix(recs, ctx)
    w = np.asarray(meta.scorer.weights)
    out = []
    from sentient_core.memory.lexical import HYBRID_ALPHA as alpha

    q = mem.query_code(query).astype(np.float64)
    q /= np.linalg.norm(q)
    # The relevance factor is the memory's hybrid: BM25/ceiling (as plain BM25 recall
    # reports it, checked against its own reference in test_bm25) mixed with the cosine.
    text = isinstance(query, str)
    lex = (
        {h.record.id: h.lexical for h in mem.recall(query, k=10**6, rank="bm25", touch=False)}
        if text
        else {}
    )
    for rec, f, v in zip(recs, feats, veto, strict=True):
        if v:
            continue
        f = f.copy()
        cos = float(mem.view().mirror.codes[rec.row].astype(np.float64) @ q)
        f[FACTOR_NAMES.index("relevance")] = (
            (lex.get(rec.id, 0.0) + alpha * cos) / (1 + alpha) if text else cos
        )
        f[FACTOR_NAMES.index("smf_similarity")] = 0.0
        f[FACTOR_NAMES.index("recency")] = np.exp(-max(0.0, now - rec.last_access) / 86400.0)
        out.append((-(f @ w), rec.row, rec.id, f[FACTOR_NAMES.index("relevance")], rec.text))
    out.sort()
    if not text:
        return [(i, -s) for s, _, i, _, _ in out[:k]]
    # The pool's size does not depend on k; past it, the kernel's order.
    pool, rest = out[:pool_size], out[pool_size:]
    stats = TermStats(t for *_, t in pool)
    w_rel = w[FACTOR_NAMES.index("relevance")]
    reranked = []
    for s, row, i, hybrid, t in pool:
        mean = (hybrid + relevance(query, t, stats)) / 2
        reranked.append((s - w_rel * (mean - hybrid), row, i))
    reranked.sort()
    listed = [(i, -s) for s, _, i in reranked] + [(i, -s) for s, _, i, _, _ in rest]
    return listed[:k]


@pytest.mark.parametrize("block", [None, 7])
def test_scored_recall_equals_the_naive_sum_and_contributions_add_up(parts, monkeypatch, block):
    # block: the factor table built 7 traces at a time (the default covers all 120 at once).
    mem, meta, texts = parts
    if block is not None:
        monkeypatch.setattr(recall_module, "TABLE_BLOCK", block)
    sr = ScoredRecall(mem, meta)
    now = T0 + 5000
    for q in (
        texts[5],
        texts[50][:30],
        "unrelated words entirely",
        mem.view().mirror.codes[17].copy(),
    ):
        hits = sr.recall(q, 10, domain="d", now=now)
        ref = _naive(mem, meta, q, 10, now, "d")
        assert [h.record.id for h in hits] == [i for i, _ in ref]
        np.testing.assert_allclose([h.score for h in hits], [s for _, s in ref], atol=1e-9)
        for h in hits:
            assert sum(h.contributions.values()) == pytest.approx(h.score, abs=1e-9)
        # Each hit's query-independent contributions are its own factors, per record.
        recs = [h.record for h in hits]
        with mem.datastore.read() as txn:
            ctx = context_for(txn, recs, domain="d", now=now)
        feats, _ = factor_matrix(recs, ctx)
        w = np.asarray(meta.scorer.weights)
        for h, f in zip(hits, feats, strict=True):
            for j, name in enumerate(FACTOR_NAMES):
                if name not in ("relevance", "recency", "smf_similarity"):
                    assert h.contributions[name] == pytest.approx(w[j] * f[j], abs=1e-12), name


def test_the_rerank_pool_does_not_depend_on_k(parts, monkeypatch):
    mem, meta, texts = parts
    sr = ScoredRecall(mem, meta)
    now = T0 + 5000
    # A pool of 6 (the store has 120 traces): k = 2 and k = 5 re-rank the same 6, k = 20
    # re-ranks them and continues in the kernel's order.
    monkeypatch.setattr(recall_module, "RERANK_POOL", 6)
    for k in (2, 5, 6, 7, 20):
        for q in (texts[5], texts[50][:30]):
            hits = sr.recall(q, k, domain="d", now=now)
            ref = _naive(mem, meta, q, k, now, "d", pool_size=6)
            assert [h.record.id for h in hits] == [i for i, _ in ref]


def test_the_term_cache_is_bounded_and_changes_no_result(parts, monkeypatch):
    mem, meta, texts = parts
    monkeypatch.setattr(recall_module, "_TERMS_CACHED", 3)
    sr = ScoredRecall(mem, meta)
    now = T0 + 5000
    for q in (texts[5], texts[50][:30], texts[5], texts[77]):
        hits = sr.recall(q, 5, domain="d", now=now)
        assert [h.record.id for h in hits] == [i for i, _ in _naive(mem, meta, q, 5, now, "d")]
        assert len(sr._rerank._terms) <= 3


def test_evidence_against_a_trace_and_its_source_lowers_it(parts):
    mem, meta, texts = parts
    sr = ScoredRecall(mem, meta)
    q = texts[9]  # trace 9 comes first by cosine, from the llm source (9 % 3 == 0)
    first = sr.recall(q, 3, domain="d", now=T0 + 5000)[0]
    assert first.record.id == 9
    # Two consistent negative signals, two judged failures, and its source punished in "d".
    meta.credit.apply([CreditSignal(trace=9, direction=-1, magnitude=1.0)] * 2)
    meta.record_outcome([9], "failure")
    meta.record_outcome([9], "failure")
    _model_disagrees(meta, "d")
    after = sr.recall(q, 3, domain="d", now=T0 + 5000)
    hit = next(h for h in after if h.record.id == 9)
    assert hit.score < first.score
    assert hit.contributions["source_weight"] < first.contributions["source_weight"]
    assert hit.contributions["surprise"] < 0 and hit.contributions["efficacy"] < 0


def test_retired_traces_are_vetoed(parts):
    mem, meta, texts = parts
    mem.retire([4])
    hits = ScoredRecall(mem, meta).recall(texts[4], 5, domain="d", now=T0 + 5000)
    assert 4 not in [h.record.id for h in hits]


def test_cli_recall_explain(tmp_path, capsys):
    import json

    from sentient_core.cli import main
    from sentient_core.core import Core

    with Core(tmp_path / "d") as core:
        for t in random_texts(20, seed=5):
            core.memory.store(t, source="local:/x.txt")
        target = core.memory.get(7).text
    assert (
        main(
            ["--data-dir", str(tmp_path / "d"), "recall", target, "-k", "3", "--explain", "--json"]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["id"] == 7 and len(rows) == 3
    assert sum(rows[0]["contributions"].values()) == pytest.approx(rows[0]["score"], abs=1e-9)
    assert {"relevance", "strength", "source_weight"} <= set(rows[0]["contributions"])


def test_a_source_weight_change_alone_reorders_the_default_recall(tmp_path):

    with Store.open(tmp_path / "s", code_dim=256) as store:
        mem = HolographicMemory(store, clock=lambda: T0)
        text = "the quokka parser fixed CVE-2024-1234 in version 1.2.3"
        a = mem.store(text, source="llm:127.0.0.1/m")
        b = mem.store(text + ".", source="local:/c/quokka.txt")
        meta = MetaMemory(mem)
        sr = ScoredRecall(mem, meta)
        before = [h.record.id for h in sr.recall(text, 2, domain="quokka", now=T0)]
        assert before == [a.id, b.id]  # equal relevance: the older row first
        # Nothing in memory changes: only the model's weight for quokka.
        _model_disagrees(meta, "quokka")
        after = sr.recall(text, 2, domain="quokka", now=T0)
        assert [h.record.id for h in after] == [b.id, a.id]
        assert after[1].contributions["source_weight"] < after[0].contributions["source_weight"]
        # Another domain keeps the model's weight: the old order.
        assert [h.record.id for h in sr.recall(text, 2, domain="other", now=T0)] == before


def test_cli_recall_ranks_by_the_learned_scorer_by_default(tmp_path, capsys):
    import json

    from sentient_core.cli import main
    from sentient_core.core import Core

    data = tmp_path / "d"
    texts = random_texts(30, seed=8)
    with Core(data) as core:
        for t in texts:
            core.memory.store(t, source="local:/x.txt")
    q = " ".join(texts[3].split()[:4])

    def recall(*extra):
        args = ["--data-dir", str(data), "recall", q, "-k", "5", "--json", *extra]
        assert main(args) == 0
        return json.loads(capsys.readouterr().out)

    default = recall("--no-touch")
    hybrid = recall("--no-touch", "--rank", "hybrid")
    with Core(data, readonly=True) as core:
        want = ScoredRecall(core.memory, MetaMemory(core.memory)).hits(q, 5)
    assert [r["id"] for r in default] == [h.record.id for h in want]
    assert default[0]["id"] == hybrid[0]["id"] == 3
    assert default[0]["score"] != hybrid[0]["score"]  # the scorer's static factors join
    assert default[0]["lexical"] == pytest.approx(hybrid[0]["lexical"])
    recall()  # without --no-touch: the recalled traces' use counts go up
    with Core(data, readonly=True) as core:
        assert core.memory.get(3).use_count == 1


def _records(seed, n=300):
    from sentient_core.store.records import TraceRecord

    rng = np.random.default_rng(seed)
    sources = ["llm:127.0.0.1/m", "local:/c/a.txt", "web:docs.python.org", "", "/free/path.txt"]
    texts = ["some text", "", "   \n ", "x" * 200]
    return [
        TraceRecord(
            id=i * 3 + 1,
            row=i,
            created=T0,
            last_access=T0 - float(rng.uniform(-100, 5 * 86400)),
            use_count=int(rng.integers(0, 300)),
            success_count=int(rng.integers(0, 4)),
            failure_count=int(rng.integers(0, 4)),
            strength=float(rng.uniform(0.05, 1.5)),
            importance=float(rng.uniform(0, 1)),
            source=sources[i % len(sources)],
            text=texts[i % 4],
            retired=bool(i % 17 == 0),
        )
        for i in range(n)
    ]


def test_factor_columns_equal_the_per_record_factor_matrix():
    from sentient_core.metamemory import FactorContext
    from sentient_core.metamemory.factors import factor_columns
    from sentient_core.store.columns import ScorerColumns

    recs = _records(4)
    ids = [r.id for r in recs]
    ctx = FactorContext(
        now=T0,
        relevance={ids[3]: 0.7, ids[9]: 1.7, 999_999: 0.5},
        smf_similarity={ids[5]: 0.4},
        source_weights={"llm:127.0.0.1/m": 0.3, "local:/c/a.txt": 2.6},
        credit={ids[2]: -0.6, ids[7]: 0.9, ids[11]: -3.0},
        open_debt_traces=frozenset({ids[4], 123_456}),
        superseded=frozenset({ids[6]}),
        unsafe_sources=frozenset({"web:docs.python.org"}),
    )
    fast, fast_veto = factor_columns(ScorerColumns(recs), ctx)
    want, want_veto = factor_matrix(recs, ctx)
    np.testing.assert_allclose(fast, want, rtol=1e-15, atol=0)
    assert fast_veto.tolist() == want_veto.tolist()


def test_scorer_columns_decode_what_the_records_hold(tmp_path):
    from sentient_core.store import traces
    from sentient_core.store.columns import ScorerColumns, scorer_columns

    with Store.open(tmp_path / "s", code_dim=256) as store:
        mem = HolographicMemory(store, clock=lambda: T0)
        for i, t in enumerate(random_texts(50, seed=6)):
            mem.store(t, source=f"local:/c/{i % 4}.txt", importance=(i % 5) / 5)
        mem.retire([3, 8])
        with store.read() as txn:
            got = scorer_columns(txn, chunk=7)  # several chunks
            want = ScorerColumns(list(traces.iter_range(txn)))
    for name in ScorerColumns.__slots__:
        a, b = getattr(got, name), getattr(want, name)
        assert a == b if isinstance(a, list) else np.array_equal(a, b), name
    assert got.retired.sum() == 2 and not got.blank.any()


def test_a_trace_stored_after_the_factor_table_waits_for_the_next_refresh(parts):
    mem, meta, texts = parts
    sr = ScoredRecall(mem, meta)
    sr.recall(texts[1], 3, domain="d", now=T0 + 5000)  # builds the table over 120 rows
    built = sr._refresh
    sr._refresh = lambda *args: None  # as if another thread stored right after it
    new = mem.store(texts[1] + " again", source="local:/c/a.txt")
    hits = sr.recall(texts[1] + " again", 3, domain="d", now=T0 + 5000)
    assert hits and new.id not in [h.record.id for h in hits]  # no factors yet: not a row
    sr._refresh = built
    assert sr.recall(texts[1] + " again", 1, domain="d", now=T0 + 5000)[0].record.id == new.id
