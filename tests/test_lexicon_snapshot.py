"""The persisted lexical index (issue 25 item 2): an open that reads the snapshot and folds in
the rows above it gives the index a rebuild gives (same postings of the active rows, same
lengths and statistics, same BM25 and hybrid hits) through appends, retirements and reopens;
a missing, foreign, stale or undecodable snapshot means a rebuild; an older store gets one
on its first writable open; ``check`` compares the snapshot with the stored terms."""

from __future__ import annotations

from pathlib import Path

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


def _snapshot(path: Path) -> lexicon.Snapshot:
    store = Store.open(path, readonly=True)
    with store.read() as txn:
        snap = lexicon.read(txn)
    store.close()
    assert snap is not None
    return snap


def _rewrite(path: Path, snap: lexicon.Snapshot) -> None:
    store = Store.open(path)
    store.write(lambda txn: lexicon.write(txn, snap))
    store.close()


def _damage(path: Path, how: str) -> None:
    """Damage the stored snapshot of the store at ``path`` (closed) in the way ``how``."""
    file = path / lexicon.FILE_NAME
    snap = _snapshot(path)
    seg = snap.segments[0]
    if how == "truncated":  # an array runs past the end of the file
        file.write_bytes(file.read_bytes()[:-3])
    elif how == "rows outside":  # rows outside the snapshot
        seg = seg._replace(rows=np.full(seg.rows.shape[0], 10**6, np.int32))
        _rewrite(path, snap._replace(segments=[seg, *snap.segments[1:]]))
    elif how == "starts flat":  # offsets that do not rise
        seg = seg._replace(starts=np.zeros(seg.starts.shape[0], np.int64))
        _rewrite(path, snap._replace(segments=[seg, *snap.segments[1:]]))
    elif how == "doc_len short":  # lengths of too few rows
        _rewrite(path, snap._replace(doc_len=snap.doc_len[:3], rows=50))
    elif how == "header":  # an undecodable header
        raw = bytearray(file.read_bytes())
        raw[16:24] = b"\xff\x00garbage"[:8]
        file.write_bytes(bytes(raw))
    else:  # an array table that claims more items than the file holds
        raw = bytearray(file.read_bytes())
        at = -(-(16 + int.from_bytes(raw[8:16], "little")) // 8) * 8
        raw[at : at + 8] = (10**9).to_bytes(8, "little")
        file.write_bytes(bytes(raw))


@pytest.mark.parametrize(
    "how", ["truncated", "rows outside", "starts flat", "doc_len short", "header", "counts"]
)
def test_undecodable_snapshot_means_a_rebuild(tmp_path: Path, how: str) -> None:
    path, want = _store_with_snapshot(tmp_path)
    _damage(path, how)
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


@pytest.mark.parametrize("change", ["fingerprint", "version", "rows", "foreign"])
def test_foreign_or_stale_snapshot_is_ignored(
    tmp_path: Path, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, want = _store_with_snapshot(tmp_path)
    snap = _snapshot(path)
    if change == "fingerprint":  # terms of another tokenisation
        _rewrite(path, snap._replace(fingerprint=b"another tokeniser"))
    elif change == "version":  # another format
        with monkeypatch.context() as patch:
            patch.setattr(lexicon, "VERSION", lexicon.VERSION + 1)
            _rewrite(path, snap)
    elif change == "rows":  # more rows than the store holds
        lens = np.zeros(10_000, np.int32)
        lens[:50] = snap.doc_len
        _rewrite(path, snap._replace(rows=10_000, doc_len=lens))
    else:  # the snapshot of another store (same rows, another creation time)
        other, _ = _store_with_snapshot(tmp_path / "other")
        (path / lexicon.FILE_NAME).write_bytes((other / lexicon.FILE_NAME).read_bytes())
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
