"""The persisted lexical index (issue 25 item 2): an open that reads the snapshot and folds in
the rows above it gives the index a rebuild gives (same postings of the active rows, same
lengths and statistics, same BM25 and hybrid hits) through appends, retirements and reopens;
a missing, foreign, stale or undecodable snapshot means a rebuild; an older store gets one
on its first writable open; ``check`` compares the snapshot with the stored terms."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from sentient_core.memory import HolographicMemory, NewTrace, lexical, lexical_persist
from sentient_core.store import Store, check_integrity, lexicon
from sentient_kernels.segments import Segment, merge_segments

D = 16
WORDS = [f"w{i:03d}x" for i in range(60)]
QUERIES = ["w001x w002x", "w010x w003x w001x", "w040x", "w005x w005x w059x w020x", "w033x w000x"]


@pytest.fixture(autouse=True)
def _small_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical_persist, "TAIL_MIN", 8)


def _items(rng: np.random.Generator, n: int) -> list[NewTrace]:
    p = 1.0 / np.arange(1, len(WORDS) + 1)
    p /= p.sum()
    return [
        NewTrace(
            text=" ".join(rng.choice(WORDS, int(rng.integers(0, 9)), p=p)),
            code=rng.standard_normal(D).astype(np.float32),
        )
        for _ in range(n)
    ]


def _header(store: Store) -> lexicon.Header | None:
    with store.read() as txn:
        return lexicon.header(txn)


def _rows(store: Store) -> int:
    """Rows the stored snapshot covers (fails the test when there is none)."""
    head = _header(store)
    assert head is not None
    return head.rows


def _rebuilt(store: Store, memory: HolographicMemory):
    """The index (and doc_len, lex_total) a rebuild without the snapshot gives."""
    m = memory.view().mirror
    saved = m.doc_len.copy(), m.lex_total
    with store.read(buffers=False) as txn:
        index = lexical.load(txn, m, None)
    got = m.doc_len.copy(), m.lex_total
    m.doc_len[:], m.lex_total = saved
    return index, got


def _active_postings(index: lexical.LexicalIndex, valid: np.ndarray) -> Segment:
    merged = Segment(
        np.zeros(0, np.uint64), np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint16)
    )
    for seg in index.segments:
        merged = merge_segments(merged, seg)
    keep = valid[merged.rows] != 0
    cum = np.concatenate([[0], np.cumsum(keep)])
    per_term = np.diff(cum[merged.starts])
    starts = np.concatenate([[0], np.cumsum(per_term[per_term > 0])])
    return Segment(merged.terms[per_term > 0], starts, merged.rows[keep], merged.tfs[keep])


def _same_as_rebuild(store: Store, memory: HolographicMemory) -> None:
    view = memory.view()
    m = view.mirror
    index, (doc_len, lex_total) = _rebuilt(store, memory)
    assert (m.doc_len[: view.n] == doc_len[: view.n]).all()
    assert m.lex_total == lex_total
    a = _active_postings(view.lexical, m.valid[: view.n])
    b = _active_postings(index, m.valid[: view.n])
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)


def _hits(memory: HolographicMemory) -> list:
    return [
        [(h.record.id, h.score) for h in memory.recall(q, k=7, rank=rank, touch=False)]
        for q in QUERIES
        for rank in ("bm25", "hybrid")
    ]


def _open(path: Path, readonly: bool = False) -> tuple[Store, HolographicMemory]:
    store = Store.open(path, readonly=readonly)
    return store, HolographicMemory(store)


def test_snapshot_open_equals_rebuild_through_appends_retirements_reopens(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    path = tmp_path / "s"
    store = Store.open(path, code_dim=D, durable=False)
    memory = HolographicMemory(store)
    ids = [r.id for r in memory.store_batch(_items(rng, 40))]
    assert _rows(store) == 40  # first append: doubling
    memory.retire(ids[3:9])
    more = [r.id for r in memory.store_batch(_items(rng, 25))]
    assert _rows(store) == 40  # 25 rows above 40: not yet due
    memory.store_batch(_items(rng, 20))
    assert _rows(store) == 85  # 45 above 40: doubled
    memory.retire([ids[20], more[2]])
    memory.store_batch(_items(rng, 10))
    want = _hits(memory)
    store.close()
    for _ in range(2):
        store, memory = _open(path)  # reads rows [0, 85), folds 10, then persists 95
        _same_as_rebuild(store, memory)
        assert _hits(memory) == want
        assert check_integrity(store).ok
        assert _rows(store) == 95
        store.close()
    store, memory = _open(path)
    memory.retire(more[5:8])
    memory.store_batch(_items(rng, 5))
    want = _hits(memory)
    store.close()
    store, memory = _open(path)
    _same_as_rebuild(store, memory)
    assert _hits(memory) == want
    store.close()
    # A rebuild (no snapshot at all) answers the same.
    store = Store.open(path)
    store.write(lexicon.clear)
    store.close()
    store, memory = _open(path, readonly=True)
    assert _header(store) is None
    assert _hits(memory) == want
    store.close()


def _store_with_snapshot(tmp_path: Path) -> tuple[Path, list]:
    rng = np.random.default_rng(3)
    path = tmp_path / "s"
    store = Store.open(path, code_dim=D, durable=False)
    memory = HolographicMemory(store)
    ids = [r.id for r in memory.store_batch(_items(rng, 50))]
    memory.retire(ids[::7])
    want = _hits(memory)
    assert _rows(store) == 50
    store.close()
    return path, want


def _tamper(path: Path, key: bytes, value: bytes | None) -> None:
    store = Store.open(path)
    if value is None:
        store.write(lambda txn: txn.delete(lexicon.DB, key))
    else:
        store.write(lambda txn: txn.put(lexicon.DB, key, value))
    store.close()


@pytest.mark.parametrize(
    "key, value",
    [
        (b"0000/rows", None),  # a value missing
        (b"0000/rows", b"\x01\x02\x03"),  # not whole items
        (b"0000/rows", np.full(200, 10**6, np.int32).tobytes()),  # rows outside the snapshot
        (b"0000/starts", np.zeros(4, np.int64).tobytes()),  # offsets that do not rise
        (b"doc_len", np.zeros(3, np.int32).tobytes()),  # lengths of too few rows
        (b"header", b"\xff\x00garbage"),  # an undecodable header
    ],
)
def test_undecodable_snapshot_means_a_rebuild(
    tmp_path: Path, key: bytes, value: bytes | None
) -> None:
    path, want = _store_with_snapshot(tmp_path)
    _tamper(path, key, value)
    store, memory = _open(path, readonly=True)
    assert lexical_persist.read(store, memory.view().n) is None
    assert _hits(memory) == want
    _same_as_rebuild(store, memory)
    assert not check_integrity(store).ok  # check names the damage
    store.close()
    store, memory = _open(path)  # a writable open replaces it
    assert check_integrity(store).ok and _rows(store) == 50
    assert _hits(memory) == want
    store.close()


def _rewrite_header(path: Path, **changes: object) -> None:
    store = Store.open(path)
    with store.read(buffers=False) as txn:
        head = lexicon.header(txn)
    assert head is not None
    raw = msgspec.msgpack.encode(msgspec.structs.replace(head, **changes))
    store.write(lambda txn: txn.put(lexicon.DB, lexicon.HEADER_KEY, raw))
    store.close()


@pytest.mark.parametrize(
    "changes",
    [
        {"fingerprint": b"another tokeniser"},  # terms of another tokenisation
        {"version": lexicon.VERSION + 1},  # another format
        {"rows": 10_000},  # more rows than the store holds
    ],
)
def test_foreign_or_stale_snapshot_is_ignored(tmp_path: Path, changes: dict) -> None:
    path, want = _store_with_snapshot(tmp_path)
    _rewrite_header(path, **changes)
    store, memory = _open(path, readonly=True)
    assert lexical_persist.read(store, memory.view().n) is None
    assert memory._w.lex_rows == 0
    assert _hits(memory) == want
    _same_as_rebuild(store, memory)
    store.close()


def test_older_store_gets_a_snapshot_on_its_first_writable_open(tmp_path: Path) -> None:
    path, want = _store_with_snapshot(tmp_path)
    store = Store.open(path)
    store.write(lexicon.clear)  # as a store from before the snapshot
    store.close()
    store, memory = _open(path, readonly=True)  # read-only: rebuilt, nothing written
    assert _header(store) is None and _hits(memory) == want
    store.close()
    store, memory = _open(path)  # the migration
    assert _rows(store) == 50 and memory._w.lex_rows == 50
    store.close()
    store, memory = _open(path, readonly=True)
    assert memory._w.lex_rows == 50  # read from the snapshot
    assert _hits(memory) == want
    _same_as_rebuild(store, memory)
    assert check_integrity(store).ok
    store.close()


def test_check_finds_a_snapshot_that_disagrees_with_the_terms(tmp_path: Path) -> None:
    path, _ = _store_with_snapshot(tmp_path)
    store = Store.open(path)
    with store.read() as txn:
        snap = lexicon.read(txn)
    assert snap is not None and check_integrity(store).ok
    seg = snap.segments[0]
    tfs = seg.tfs.copy()
    tfs[len(tfs) // 2] += 1  # one term frequency off
    bad = snap._replace(segments=[seg._replace(tfs=tfs)])
    store.write(lambda txn: lexicon.write(txn, bad))
    problems = check_integrity(store).problems
    assert any("postings differ" in p for p in problems)
    lens = snap.doc_len.copy()
    lens[4] += 1  # one length off
    store.write(lambda txn: lexicon.write(txn, snap._replace(doc_len=lens)))
    assert any("length" in p for p in check_integrity(store).problems)
    store.close()
