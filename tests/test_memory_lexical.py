"""BM25 and hybrid recall of the memory: exact against a from-scratch reference over
the active traces, incremental (store, store_unique, refresh), retirement, restart
without re-tokenising, older stores without terms (read-only and backfilled)."""

from __future__ import annotations

import lmdb
import numpy as np
import pytest

from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.memory import HolographicMemory, NewTrace, terms
from sentient_core.memory import lexical as mem_lexical
from sentient_core.store import Store, check_integrity
from sentient_core.store import terms as store_terms
from tests.naive import bm25 as naive
from tests.test_memory import DIM, hit_key

WORDS = [
    *("tide", "moon", "orbit", "gravity", "ocean", "wave", "salt", "reef", "coral", "kelp"),
    *("storm", "wind", "sail", "harbour", "anchor", "compass", "chart", "island", "current"),
    "drift",
]


def texts_of(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, len(WORDS) + 1)
    p /= p.sum()
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 25)), p=p)) for _ in range(n)]


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store", code_dim=DIM) as s:
        yield s


def reference(mem: HolographicMemory, query: str, k: int) -> tuple[list[int], list[float]]:
    """BM25 from scratch over the active traces' texts (rows of the mirror)."""
    view = mem.view()
    m, n = view.mirror, view.n
    docs, lens = [], []
    for row in range(n):
        d, length = naive.term_counts(mem.get(int(m.row_id[row])).text)
        docs.append(d)
        lens.append(length)
    qd, _ = naive.term_counts(query)
    q = sorted(qd.items())
    valid = [bool(v) for v in m.valid[:n]]
    score, idf = naive.scores(docs, lens, [(h, float(w)) for h, w in q], valid)
    ceil = float(np.dot([w for _, w in q], idf))
    rows, top = naive.topk(score, k)
    return [int(m.row_id[r]) for r in rows], (top / ceil).tolist()


def bm25_hits(mem, query, k=8):
    hits = mem.recall(query, k=k, touch=False, rank="bm25")
    return [h.record.id for h in hits], [h.score for h in hits]


QUERIES = ("moon tide", "coral reef storm storm", "compass", "drift island anchor harbour")


def test_new_traces_are_searchable_at_once_and_exact(store):
    mem = HolographicMemory(store)
    for batch in range(4):
        mem.store_batch([NewTrace(text=t) for t in texts_of(30, seed=batch)])
        mem.store(f"the CVE-2024-{11053 + batch} fix landed in 7.88.1-10+deb12u{batch}")
        for q in QUERIES:
            assert bm25_hits(mem, q) == reference(mem, q, 8)
        ids, _ = bm25_hits(mem, f"CVE-2024-{11053 + batch}")
        assert mem.get(ids[0]).text.startswith(f"the CVE-2024-{11053 + batch} fix")
    got = mem.store_unique([NewTrace(text="a brand new zanzibar note"), NewTrace(text="compass")])
    assert all(s.new for s in got)
    assert bm25_hits(mem, "zanzibar")[0] == [got[0].record.id]
    # Segments stay few (binary-counter merging) and hold every active trace's postings.
    assert len(mem.view().lexical.segments) <= 8


def test_retired_traces_leave_the_ranking_and_the_statistics(store):
    mem = HolographicMemory(store)
    recs = mem.store_batch([NewTrace(text=t) for t in texts_of(80, seed=7)])
    mem.retire([r.id for r in recs[::3]])
    for q in QUERIES:
        ids, scores = bm25_hits(mem, q, k=20)
        want_ids, want_scores = reference(mem, q, 20)
        assert ids == want_ids
        np.testing.assert_allclose(scores, want_scores, rtol=1e-12)
        assert not {r.id for r in recs[::3]} & set(ids)
    total = sum(naive.term_counts(mem.get(r.id).text)[1] for r in recs if r not in recs[::3])
    assert mem.view().mirror.lex_total == total


def test_hybrid_is_the_default_for_text_and_mixes_bm25_with_the_cosine(store):
    mem = HolographicMemory(store)
    mem.store_batch([NewTrace(text=t) for t in texts_of(60, seed=3)])
    alpha = mem_lexical.HYBRID_ALPHA
    for q in QUERIES:
        hits = mem.recall(q, k=60, touch=False)
        assert hit_key(hits) == hit_key(mem.recall(q, k=60, touch=False, rank="hybrid"))
        code = mem.encoder.encode(q).code.astype(np.float64)
        for h in hits:
            cos = float(
                mem.view().mirror.codes[h.row].astype(np.float64) @ code / np.linalg.norm(code)
            )
            assert h.cosine == pytest.approx(cos, abs=1e-12)
            assert h.score == pytest.approx((h.lexical + alpha * h.cosine) / (1 + alpha), abs=1e-15)
        want = sorted(hits, key=lambda h: (-h.score, h.row))
        assert [h.row for h in hits] == [h.row for h in want]
        bm = {h.record.id: h.score for h in mem.recall(q, k=60, touch=False, rank="bm25")}
        for h in hits:
            assert h.lexical == pytest.approx(bm.get(h.record.id, 0.0), rel=1e-12)
    # A query sharing no word still recalls by cosine, scaled by α/(1+α).
    cos_hits = mem.recall("zebra quagga", k=3, touch=False, rank="cosine")
    hyb = mem.recall("zebra quagga", k=3, touch=False)
    assert [h.row for h in hyb] == [h.row for h in cos_hits]
    for a, b in zip(hyb, cos_hits, strict=True):
        assert a.score == pytest.approx(alpha * b.score / (1 + alpha), abs=1e-12)
    assert mem.recall("zebra quagga", k=3, touch=False, rank="bm25") == []


def test_batch_recall_equals_single_recalls_for_every_rank(store):
    mem = HolographicMemory(store)
    mem.store_batch([NewTrace(text=t) for t in texts_of(50, seed=4)])
    for rank in (None, "hybrid", "bm25", "cosine"):
        batch = mem.recall_batch(list(QUERIES), k=5, touch=False, rank=rank)
        for q, got in zip(QUERIES, batch, strict=True):
            assert hit_key(got) == hit_key(mem.recall(q, k=5, touch=False, rank=rank))


def test_rank_argument_is_checked(store):
    mem = HolographicMemory(store)
    mem.store("tide and moon")
    with pytest.raises(ArgumentError, match="rank must be one of"):
        mem.recall("tide", rank="tfidf", touch=False)
    code = mem.encoder.encode("tide and moon").code
    with pytest.raises(ArgumentError, match="only rank by cosine"):
        mem.recall(code, rank="bm25", touch=False)
    with pytest.raises(ArgumentError, match="only rank by cosine"):
        mem.recall_batch(code[None, :], rank="hybrid", touch=False)
    assert mem.recall(code, touch=False)[0].cosine == pytest.approx(1.0)


def test_a_reader_refresh_picks_up_new_traces_and_retirements(store):
    writer = HolographicMemory(store)
    reader = HolographicMemory(store)
    writer.store_batch([NewTrace(text=t) for t in texts_of(40, seed=5)])
    assert bm25_hits(reader, "moon") == ([], [])
    assert reader.refresh() == 40
    for q in QUERIES:
        assert bm25_hits(reader, q) == bm25_hits(writer, q)
    recs = writer.store_batch([NewTrace(text=t) for t in texts_of(10, seed=6)])
    writer.retire([recs[0].id, 3])
    reader.refresh()
    for q in QUERIES:
        assert bm25_hits(reader, q) == bm25_hits(writer, q) == reference(writer, q, 8)


def test_reopening_reads_stored_terms_and_never_tokenises(store, monkeypatch):
    mem = HolographicMemory(store)
    mem.store_batch([NewTrace(text=t) for t in texts_of(70, seed=8)])
    mem.retire([5, 6])
    want = {q: hit_key(mem.recall(q, k=10, touch=False)) for q in QUERIES}

    def no_tokenising(texts):
        if len(texts) != 1:  # a query's own terms are fine
            raise AssertionError("load tokenised stored texts")
        return real(texts)

    real = terms.count
    monkeypatch.setattr(terms, "count", no_tokenising)
    again = HolographicMemory(store)
    assert {q: hit_key(again.recall(q, k=10, touch=False)) for q in QUERIES} == want
    assert again.view().mirror.lex_total == mem.view().mirror.lex_total
    assert (
        again.view().mirror.doc_len[: again.total] == mem.view().mirror.doc_len[: mem.total]
    ).all()


def _drop_terms(path) -> None:
    """Make the store look like one from before terms: drop the sub-database and stamp."""
    env = lmdb.open(str(path), max_dbs=64)
    with env.begin(write=True) as txn:
        txn.drop(env.open_db(b"terms", txn=txn), delete=True)
        txn.delete(store_terms.STAMP_KEY, db=env.open_db(b"state", txn=txn))
    env.close()


def test_older_stores_are_tokenised_read_only_and_backfilled_writable(tmp_path):
    path = tmp_path / "old"
    with Core(path) as core:
        core.memory.store_batch([NewTrace(text=t) for t in texts_of(50, seed=9)])
        core.memory.retire([4])
        want = {q: hit_key(core.memory.recall(q, k=6, touch=False)) for q in QUERIES}
    _drop_terms(path)
    with Core(path, readonly=True) as core:  # read-only: tokenises the texts in RAM
        assert not core.store.has_db("terms")
        assert {q: hit_key(core.memory.recall(q, k=6, touch=False)) for q in QUERIES} == want
    with Core(path) as core:  # writable: the terms are backfilled once
        with core.store.read() as txn:
            assert txn.entries("terms") == 50 and terms.usable(txn) and not terms.missing(txn)
        assert {q: hit_key(core.memory.recall(q, k=6, touch=False)) for q in QUERIES} == want
        assert check_integrity(core.store).ok


def test_a_changed_tokenisation_is_rebuilt(tmp_path):
    path = tmp_path / "s"
    with Core(path) as core:
        core.memory.store_batch([NewTrace(text=t) for t in texts_of(20, seed=10)])
        want = hit_key(core.memory.recall("moon tide", k=5, touch=False))
        core.store.write(lambda txn: txn.put("state", store_terms.STAMP_KEY, b"other" * 3))
    with Core(path, readonly=True) as core:
        with core.store.read() as txn:
            assert not terms.usable(txn)
        assert hit_key(core.memory.recall("moon tide", k=5, touch=False)) == want
    with Core(path) as core:
        with core.store.read() as txn:
            assert terms.usable(txn) and not terms.missing(txn)
        assert hit_key(core.memory.recall("moon tide", k=5, touch=False)) == want


def test_integrity_checks_the_terms(store):
    mem = HolographicMemory(store)
    mem.store_batch([NewTrace(text=t) for t in texts_of(5, seed=11)])
    assert check_integrity(store).ok
    store.write(lambda txn: txn.put("terms", (77).to_bytes(8, "big"), bytes(8)))
    report = check_integrity(store)
    assert any("trace 77 belong to no stored trace" in p for p in report.problems)
    store.write(lambda txn: txn.put("terms", (3).to_bytes(8, "big"), b"\x05" + bytes(7)))
    assert any("terms of trace 3" in p and "decode" in p for p in check_integrity(store).problems)


def test_traces_stored_without_terms_are_tokenised_then_backfilled(tmp_path):
    from sentient_core.store import TraceRecord, traces

    path = tmp_path / "s"
    with Core(path) as core:
        core.memory.store_batch([NewTrace(text=t) for t in texts_of(30, seed=12)])
    with Store.open(path) as st:  # other code appending traces directly: no terms
        rows = np.eye(DIM, dtype=np.float32)[:2]
        recs = [
            TraceRecord(id=0, row=0, created=1.0, last_access=1.0, text=t)
            for t in ("a zanzibar quagga", "quagga crossing")
        ]
        st.write(lambda txn: traces.append(txn, recs, rows))
        with st.read() as txn:
            assert terms.missing(txn) and store_terms.entries(txn) == 30
        mem = HolographicMemory(st)
        # Same length (2 tokens), same tf: a tie, so the older trace first.
        assert [mem.get(i).text for i in bm25_hits(mem, "quagga")[0]] == [
            "a zanzibar quagga",
            "quagga crossing",
        ]
        want = {q: bm25_hits(mem, q) for q in (*QUERIES, "quagga zanzibar")}
    with Core(path) as core:
        with core.store.read() as txn:
            assert not terms.missing(txn) and store_terms.entries(txn) == 32
        assert {q: bm25_hits(core.memory, q) for q in want} == want


def test_counting_a_batch_equals_counting_each_text():
    texts = [
        *texts_of(20, seed=13),
        "",
        "ΟΔΥΣΣΕΥΣ and Σ",
        "nul\x00inside the text",
        "Straße İstanbul",
    ]
    batch = terms.count(texts)
    for i, t in enumerate(texts):
        one = terms.count([t])
        lo, hi = batch.offsets[i], batch.offsets[i + 1]
        assert batch.terms[lo:hi].tolist() == one.terms.tolist()
        assert batch.tfs[lo:hi].tolist() == one.tfs.tolist()
        assert batch.lengths[i] == one.lengths[0]
    no_nul = terms.count(texts[:-2])
    np.testing.assert_array_equal(no_nul.lengths, batch.lengths[:-2])


def test_maxscore_ranks_equal_the_exhaustive_ones_through_appends_and_retirements(store):
    """The memory's BM25 and hybrid (MaxScore) against the accumulate-every-posting path."""
    mem = HolographicMemory(store)
    rng = np.random.default_rng(4)
    queries = [*QUERIES, "tide", "tide tide moon", "nowhere", "kelp drift drift storm wind sail"]
    for batch, size in enumerate((1, 300, 2, 700, 40, 1)):
        mem.store_batch([NewTrace(text=t) for t in texts_of(size, seed=100 + batch)])
        ids = mem.view().mirror.row_id[: mem.view().n]
        mem.retire([int(i) for i in rng.choice(ids, size=max(1, ids.size // 30), replace=False)])
        view = mem.view()
        for q in queries:
            mq = mem.query(q)
            for rank in ("bm25", "hybrid"):
                got, want = (
                    mem_lexical.search(
                        view.lexical,
                        view.mirror,
                        view.n,
                        mq.terms,
                        mq.weights,
                        k,
                        rank,
                        mq.code,
                        exhaustive=exhaustive,
                    )
                    for k, exhaustive in ((10, False), (10, True))
                )
                for x, y in zip(got, want, strict=True):
                    np.testing.assert_array_equal(x, y)
