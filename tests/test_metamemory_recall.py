"""Scored recall on a real store: the learned scorer's rank equals a naive Σ w_k f_k over
factor_matrix for every active trace; contributions add up to the score; vetoed traces
never come back; a contradicted trace from a distrusted source drops below cosine order."""

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
from sentient_core.metamemory.recall import ScoredRecall
from sentient_core.store import Store
from tests.test_memory import random_texts

T0 = 1_700_000_000.0


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


def _naive(mem, meta, query, k, now, domain):
    recs = list(mem.recent(10**6))
    with mem.datastore.read() as txn:
        ctx = context_for(txn, recs, domain=domain, now=now)
    feats, veto = factor_matrix(recs, ctx)
    w = np.asarray(meta.scorer.weights)
    out = []
    from sentient_core.memory.recall import query_code

    q = query_code(mem, query).astype(np.float64)
    q /= np.linalg.norm(q)
    for rec, f, v in zip(recs, feats, veto, strict=True):
        if v:
            continue
        f = f.copy()
        f[FACTOR_NAMES.index("relevance")] = float(mem._m.codes[rec.row].astype(np.float64) @ q)
        f[FACTOR_NAMES.index("smf_similarity")] = 0.0
        f[FACTOR_NAMES.index("recency")] = np.exp(-max(0.0, now - rec.last_access) / 86400.0)
        out.append((-(f @ w), rec.row, rec.id))
    out.sort()
    return [(i, -s) for s, _, i in out[:k]]


def test_scored_recall_equals_the_naive_sum_and_contributions_add_up(parts):
    mem, meta, texts = parts
    sr = ScoredRecall(mem, meta)
    now = T0 + 5000
    for q in (texts[5], texts[50][:30], "unrelated words entirely"):
        hits = sr.recall(q, 10, domain="d", now=now)
        ref = _naive(mem, meta, q, 10, now, "d")
        assert [h.record.id for h in hits] == [i for i, _ in ref]
        np.testing.assert_allclose([h.score for h in hits], [s for _, s in ref], atol=1e-9)
        for h in hits:
            assert sum(h.contributions.values()) == pytest.approx(h.score, abs=1e-9)


def test_evidence_against_a_trace_and_its_source_lowers_it(parts):
    mem, meta, texts = parts
    sr = ScoredRecall(mem, meta)
    q = texts[9]  # trace 9 comes first by cosine, from the llm source (9 % 3 == 0)
    first = sr.recall(q, 3, domain="d", now=T0 + 5000)[0]
    assert first.record.id == 9
    # Two consistent negative signals, judged failures, and its source punished in "d".
    meta.credit.apply([CreditSignal(trace=9, direction=-1, magnitude=1.0)] * 2)
    meta.record_outcome([9], "failure")
    from sentient_core.metamemory import make_event
    from sentient_core.store.surprise import SurpriseBasis

    for _ in range(4):
        meta.sources.observe(
            make_event(
                context="q",
                action="recall",
                magnitude=1.0,
                basis=SurpriseBasis(rule="t"),
                domain="d",
                source="llm:127.0.0.1/m",
                cause="disagreement",
                time=T0,
            )
        )
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
