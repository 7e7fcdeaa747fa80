"""Known-item retrieval quality (issue 3 item 10) and the evaluation harness itself."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from sentient_core import pydocs
from sentient_core import retrieval_eval as ev
from sentient_core.pydocs import PyDoc
from sentient_core.retrieval_eval import (
    CHUNK_CHARS,
    CHUNK_OVERLAP,
    EvalReport,
    chunk_spans,
    format_report,
    load_corpus,
    run_eval,
)

N_QUERIES = 1000


@pytest.fixture(scope="module")
def token_chunk() -> EvalReport:
    return run_eval("token", n_queries=N_QUERIES, seed=0, level="chunk")


@pytest.fixture(scope="module")
def compat_chunk() -> EvalReport:
    return run_eval("char-compat", n_queries=N_QUERIES, seed=0, level="chunk")


# --------------------------------------------------------------------------- quality bars


def test_default_encoder_recall_at_10_on_chunks(token_chunk):
    assert token_chunk.n_queries == N_QUERIES
    assert token_chunk.recall_at_10 >= 0.9
    assert token_chunk.recall_at_1 <= token_chunk.recall_at_10


def test_default_encoder_recall_at_10_on_whole_documents():
    report = run_eval("token", n_queries=N_QUERIES, seed=0, level="doc")
    assert report.n_units == report.n_docs
    assert report.recall_at_10 >= 0.9


def test_related_pairs_score_well_above_unrelated(token_chunk):
    rel = token_chunk.related.median
    unrelated = max(token_chunk.unrelated_query.median, token_chunk.unrelated_doc.median)
    # The floor keeps the ratio meaningful when unrelated medians are near or below 0.
    assert rel >= 3.0 * max(unrelated, 0.05)
    # The reference design's intensity maps scored unrelated pairs at a median 0.54.
    assert token_chunk.unrelated_doc.median < 0.2
    assert token_chunk.unrelated_doc.p90 < token_chunk.related.median


def test_default_beats_char_compat(token_chunk, compat_chunk):
    assert token_chunk.recall_at_10 > compat_chunk.recall_at_10
    assert token_chunk.recall_at_1 > compat_chunk.recall_at_1
    # Same queries, same units: only the encoder differs.
    assert (token_chunk.n_units, token_chunk.n_queries) == (
        compat_chunk.n_units,
        compat_chunk.n_queries,
    )


# --------------------------------------------------------------------------- harness


def test_corpus_is_fixed_and_has_both_sources():
    docs = load_corpus()
    assert docs is load_corpus()
    sources = {d.kind for d in docs}
    assert sources == {"topic", "module"}
    texts = [d.text for d in docs]
    assert len(set(texts)) == len(texts)
    modules = [d for d in docs if d.kind == "module"]
    assert all(len(d.text) >= pydocs.MIN_DOCSTRING_CHARS for d in modules)
    assert not {d.name for d in modules} & pydocs.SKIPPED_MODULES

    assert [d.name for d in modules] == sorted(d.name for d in modules)


def test_the_docs_loader_never_imports_python_modules():
    code = (
        "import sys\n"
        "from sentient_core import pydocs\n"
        "before = set(sys.modules)\n"
        "docs = pydocs.documents()\n"
        "pure = [m for m in ('pdb', 'csv', 'webbrowser', 'smtplib', 'this') if m in sys.modules]\n"
        "print(len(docs), sorted(set(sys.modules) & set(pure) - before))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, imported = out.stdout.split(" ", 1)
    assert int(n) > 150 and imported.strip() == "[]"


@pytest.mark.parametrize("n_chars", [0, 1, 1999, 2000, 2001, 3600, 3601, 10_000, 65_432])
def test_chunk_spans_cover_with_overlap(n_chars):
    spans = chunk_spans(n_chars)
    assert spans[0][0] == 0
    assert spans[-1][1] == n_chars
    for (s0, e0), (s1, e1) in itertools.pairwise(spans):
        assert e0 - s0 == CHUNK_CHARS
        assert s1 == e0 - CHUNK_OVERLAP
        assert e1 > e0
    assert all(0 < e - s <= CHUNK_CHARS for s, e in spans) or n_chars == 0


def test_chunk_spans_rejects_bad_overlap():
    with pytest.raises(ValueError):
        chunk_spans(100, size=10, overlap=10)


def test_query_targets_contain_the_query():
    docs = load_corpus()
    units, owner, spans = ev._units(docs, "chunk")
    queries, q_doc, targets = ev._queries(docs, spans, 300, np.random.default_rng(7))
    for text, d, target in zip(queries, q_doc, targets, strict=True):
        assert len(text.split()) == ev.QUERY_WORDS
        assert text in docs[d].text
        assert target
        assert all(owner[u] == d for u in target)
        assert any(text in units[u] for u in target)


def test_run_eval_is_deterministic_and_serialisable():
    a = run_eval("token", n_queries=50, seed=3)
    b = run_eval("token", n_queries=50, seed=3)
    strip = {"encode_seconds"}
    da = {k: v for k, v in a.as_dict().items() if k not in strip}
    db = {k: v for k, v in b.as_dict().items() if k not in strip}
    assert da == db
    json.dumps(a.as_dict())
    table = format_report([a, run_eval("char-compat", n_queries=50, seed=3)])
    assert "token" in table
    assert "char-compat" in table


def test_run_eval_on_a_tiny_corpus_finds_the_obvious_document():
    corpus = [
        PyDoc("topic", "bread", "knead dough flour yeast oven crust loaf bake rise " * 3),
        PyDoc("topic", "comet", "comet nucleus ice coma tail orbit telescope sun " * 3),
        PyDoc("topic", "bonds", "bond coupon maturity yield interest rate duration " * 3),
    ]
    report = run_eval("token", n_queries=30, seed=1, level="doc", corpus=corpus)
    assert report.n_docs == 3
    assert report.recall_at_1 == 1.0
    assert report.related.median > report.unrelated_query.median


def test_run_eval_rejects_bad_arguments():
    with pytest.raises(ValueError):
        run_eval("token", n_queries=10, level="page")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        run_eval("token", n_queries=0)
    with pytest.raises(ValueError):
        run_eval("no-such-encoder", n_queries=10)


def test_measure_throughput_reports_consistent_figures():
    texts = ["prime resonance oscillators and holographic memory " * 40] * 20
    t = ev.measure_throughput("token", texts, repeats=1)
    assert t.n_texts == 20
    assert t.mb == pytest.approx(sum(len(x.encode()) for x in texts) / 1e6)
    assert t.texts_per_s == pytest.approx(t.n_texts / t.seconds)
    assert t.mb_per_s == pytest.approx(t.mb / t.seconds)
