"""Memory with ``compact_codes=True``: cosine recall from int8 codes, the same hits as float32.

Two real LMDB stores get the same traces; one memory scans int8 codes, the
other the float32 mirror. Every cosine recall must return the same records,
rows and scores (bit for bit), through appends, retirements and a reopen.
"""

from __future__ import annotations

import numpy as np
import pytest

from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.memory import compact as compact_mod
from sentient_core.store import Store, check_integrity, codes_q8

DIM = 64


def _key(hits):
    return [(h.record.id, h.row, float(h.score).hex()) for h in hits]


def _codes(rng, n):
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    # Exact duplicates and one-ulp neighbours: ties and near-ties the int8
    # codes cannot tell apart.
    rows[10:20] = rows[3]
    rows[20:30] = rows[4]
    rows[25, 7] = np.nextafter(rows[25, 7], np.float32(np.inf))
    return rows


def _store_both(plain, compact, codes, start):
    items = [NewTrace(text=f"trace {start + i}", code=c, primes=()) for i, c in enumerate(codes)]
    ids = [r.id for r in plain.store_batch(items)]
    assert [r.id for r in compact.store_batch(items)] == ids
    return ids


def _compare(plain, compact, rng, queries, ks=(1, 5, 12, 40)):
    for i in range(queries):
        if i % 3 == 0:
            q = rng.standard_normal(DIM).astype(np.float32)
        else:  # near a stored code: a clear winner, then ties among copies
            row = int(rng.integers(0, plain._w.mirror.n))
            q = plain._w.mirror.codes[row] + np.float32(0.02) * rng.standard_normal(DIM).astype(
                np.float32
            )
        k = ks[i % len(ks)]
        want = plain.recall(q, k=k, threshold=-1.0, touch=False)
        got = compact.recall(q, k=k, threshold=-1.0, touch=False)
        assert _key(got) == _key(want)
        assert len(want) == min(k, plain.count)


@pytest.mark.parametrize(
    ("kept", "grow_rows"),
    [(True, 65536), (False, 64), (False, 65536)],
    ids=["stored", "copy-grows", "in-ram"],
)
def test_compact_recall_equals_float32_recall_through_appends_and_retirements(
    tmp_path, monkeypatch, kept, grow_rows
):
    # kept: the store keeps the int8 copy (a writable compact open makes it; every append
    # writes its rows). Else the memory quantises in RAM (as for a read-only store without
    # the copy); 64: that copy grows (and copies itself) several times on the way.
    monkeypatch.setattr(compact_mod, "_GROW_ROWS", grow_rows)
    if not kept:
        monkeypatch.setattr(codes_q8, "enable", lambda txn: 0)
    with (
        Store.open(tmp_path / "plain", code_dim=DIM) as a,
        Store.open(tmp_path / "compact", code_dim=DIM) as b,
    ):
        plain, compact = HolographicMemory(a), HolographicMemory(b, compact_codes=True)
        _through_appends_and_retirements(plain, compact, b, kept)


def _through_appends_and_retirements(plain, compact, store, kept):
    rng = np.random.default_rng(61)
    ids = _store_both(plain, compact, _codes(rng, 500), 0)
    _compare(plain, compact, rng, 120)
    held = compact._w.compact
    assert held is not None and held.stored == kept
    assert plain._w.compact is None

    def rows_in_int8():
        return codes_q8.files(store).stored_rows() if kept else held.n

    assert rows_in_int8() == 500
    # Appends: only the new rows are quantised (with the append, or on the next search).
    ids += _store_both(plain, compact, _codes(rng, 300), 500)
    _compare(plain, compact, rng, 120)
    assert rows_in_int8() == 800
    # Retirements (including the exact duplicates at the k-th places) are masked.
    gone = sorted({ids[int(i)] for i in rng.choice(800, 150, replace=False)} | set(ids[11:16]))
    assert plain.retire(gone) == compact.retire(gone)
    assert plain.count == compact.count == 800 - len(gone)
    _compare(plain, compact, rng, 120)
    # Text queries ranked by cosine take the same path.
    for text in ("trace 7", "trace 512", "nothing like it"):
        want = plain.recall(text, k=8, threshold=-1.0, touch=False, rank="cosine")
        got = compact.recall(text, k=8, threshold=-1.0, touch=False, rank="cosine")
        assert _key(got) == _key(want)


@pytest.mark.parametrize("kept", [True, False], ids=["stored", "in-ram"])
def test_compact_recall_after_reopening_the_store(tmp_path, kept):
    # kept: written by a compact memory (the store keeps the int8 copy), reopened writable;
    # else written by a plain memory and reopened read-only (nothing to map: quantised here).
    rng = np.random.default_rng(67)
    codes = _codes(rng, 400)
    with Store.open(tmp_path / "compact", code_dim=DIM) as first:
        HolographicMemory(first, compact_codes=kept).store_batch(
            [NewTrace(text=f"trace {i}", code=c, primes=()) for i, c in enumerate(codes)]
        )
    with (
        Store.open(tmp_path / "plain", code_dim=DIM) as a,
        Store.open(tmp_path / "compact", readonly=not kept) as b,
    ):
        plain = HolographicMemory(a)
        plain.store_batch(
            [NewTrace(text=f"trace {i}", code=c, primes=()) for i, c in enumerate(codes)]
        )
        reopened = HolographicMemory(b, compact_codes=True)
        held = reopened._w.compact
        assert held is not None and held.stored == kept and held.n == 0
        _compare(plain, reopened, rng, 60)
        assert held.n == (0 if kept else 400)
        assert check_integrity(b).ok


def test_check_finds_an_int8_row_that_is_not_its_float32_rows_quantisation(tmp_path):
    rng = np.random.default_rng(5)
    with Store.open(tmp_path / "s", code_dim=DIM) as store:
        HolographicMemory(store, compact_codes=True).store_batch(
            [NewTrace(text=f"t{i}", code=c, primes=()) for i, c in enumerate(_codes(rng, 300))]
        )
        assert check_integrity(store).ok
    with open(tmp_path / "s" / codes_q8.NAMES[0], "r+b") as f:
        f.seek(123 * DIM + 5)
        value = f.read(1)
        f.seek(123 * DIM + 5)
        f.write(bytes([(value[0] + 1) % 256]))
    with Store.open(tmp_path / "s", readonly=True) as store:
        report = check_integrity(store)
    assert any("row 123 of codes.q8 is not the quantisation" in p for p in report.problems)


def test_the_int8_copy_follows_appends_from_a_plain_memory_and_a_backup_carries_it(tmp_path):
    rng = np.random.default_rng(9)
    path = tmp_path / "s"
    with Store.open(path, code_dim=DIM) as store:
        HolographicMemory(store, compact_codes=True)  # the store keeps the copy from now on
    with Store.open(path) as store:  # a memory without compact codes appends
        HolographicMemory(store).store_batch(
            [NewTrace(text=f"t{i}", code=c, primes=()) for i, c in enumerate(_codes(rng, 250))]
        )
        assert codes_q8.files(store).stored_rows() == 250
        assert check_integrity(store).ok
        target = store.copy(tmp_path / "backup")
    with Store.open(target, readonly=True) as copy:
        assert check_integrity(copy).ok
        assert codes_q8.files(copy).stored_rows() == 250


def test_hybrid_and_scored_recall_scan_the_int8_copy_with_the_same_answers(tmp_path, monkeypatch):
    # The hybrids' full cosine scan (for rows holding no query term) and the scored recall
    # of a code read the int8 copy in a compact memory: the same hits and scores, bit for
    # bit, as a plain memory's. The scans are counted, so the int8 path is known to run.
    from sentient_core.metamemory import MetaMemory
    from sentient_core.metamemory import recall as scored_mod
    from sentient_core.metamemory.recall import ScoredRecall
    from sentient_kernels import maxscore_hybrid, maxscore_scored
    from tests.test_memory import random_texts

    calls = {"hybrid": 0, "scored": 0, "code": 0, "read": 0}

    def counted(module, name, key):
        real = getattr(module, name)

        def wrapper(*args, **kw):
            calls[key] += 1
            return real(*args, **kw)

        monkeypatch.setattr(module, name, wrapper)

    counted(maxscore_hybrid, "exact_topk_quantised", "hybrid")
    counted(maxscore_scored, "topk_scored_quantised", "scored")
    counted(scored_mod, "topk_scored_quantised", "code")
    texts = random_texts(900, seed=5, words=8)
    # Shared words: a query term then matches several traces, the rest only by cosine.
    texts = [f"{t} common{i % 7} shared{i % 3}" for i, t in enumerate(texts)]

    def clock():  # the same times for both memories
        ticks = iter(np.arange(1.7e9, 1.7e9 + 10_000, 1.0))
        return lambda: float(next(ticks))

    with (
        Store.open(tmp_path / "plain", code_dim=256) as a,
        Store.open(tmp_path / "compact", code_dim=256) as b,
    ):
        plain = HolographicMemory(a, clock=clock())
        compact = HolographicMemory(b, clock=clock(), compact_codes=True)
        # The candidates' float32 rows are read from the store's code file (pread), not
        # through its mapping.
        held = compact.compact_codes
        assert held is not None and held.gather is not None and plain.compact_codes is None
        read = held.gather

        def counted_read(rows):
            calls["read"] += 1
            return read(rows)

        held.gather = counted_read
        for t in texts:
            plain.store(t)
            compact.store(t)
        plain.retire([r.record.id for r in plain.recall(texts[40], k=3, touch=False)])
        compact.retire([r.record.id for r in compact.recall(texts[40], k=3, touch=False)])
        scored_plain = ScoredRecall(plain, MetaMemory(plain))
        scored_compact = ScoredRecall(compact, MetaMemory(compact))
        rng = np.random.default_rng(9)
        queries = [texts[int(i)].split()[0] for i in rng.integers(0, 900, 15)]  # rare word
        queries += ["common3", "shared1 common5", "nothing stored here", texts[7][:20]]
        for q in queries:
            for k in (1, 10, 40):
                want = plain.recall(q, k=k, threshold=-1.0, touch=False, rank="hybrid")
                got = compact.recall(q, k=k, threshold=-1.0, touch=False, rank="hybrid")
                assert _key(got) == _key(want), q
            want_s = scored_plain.recall(q, 10, now=1.7e9 + 20_000)
            got_s = scored_compact.recall(q, 10, now=1.7e9 + 20_000)
            assert [(h.record.id, h.score) for h in got_s] == [
                (h.record.id, h.score) for h in want_s
            ]
        for row in (0, 17, 450):
            code = plain._w.mirror.codes[row].copy()
            want_s = scored_plain.recall(code, 10, now=1.7e9 + 20_000)
            got_s = scored_compact.recall(code, 10, now=1.7e9 + 20_000)
            assert [(h.record.id, h.score) for h in got_s] == [
                (h.record.id, h.score) for h in want_s
            ]
    assert calls["hybrid"] > 0 and calls["scored"] > 0 and calls["code"] == 3
    assert calls["read"] >= calls["hybrid"] + calls["scored"] + calls["code"]
