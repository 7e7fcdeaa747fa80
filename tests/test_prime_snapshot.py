"""The prime index's snapshot (primes.idx): an open that maps it and folds in the rows
above it gives the index a counting sort over every row gives, through appends,
retirements, reopens and backups; a missing, foreign, stale or malformed file means
the counting sort; ``check`` compares it with the stored primes."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from sentient_core.memory import HolographicMemory, NewTrace, lexical_persist
from sentient_core.memory.mirror import PrimeIndex
from sentient_core.store import Store, check_integrity, colblocks, prime_snapshot

D = 16


@pytest.fixture(autouse=True)
def _small_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical_persist, "TAIL_MIN", 8)


def _items(rng: np.random.Generator, n: int) -> list[NewTrace]:
    words = [f"w{i:02d}" for i in range(40)]
    return [
        NewTrace(
            text=" ".join(rng.choice(words, int(rng.integers(1, 12)))),
            code=rng.standard_normal(D).astype(np.float32),
        )
        for _ in range(n)
    ]


def _as_lists(index: PrimeIndex) -> dict[int, list[int]]:
    return {p: post.rows.tolist() for p, post in index.postings.items() if post.rows.size}


def _reference(store: Store) -> dict[int, list[int]]:
    """The counting sort over every stored row's primes."""
    with store.read() as txn:
        n = txn.counters().row_count
        cols = colblocks.load(txn, n)
    assert cols is not None
    return _as_lists(PrimeIndex.of_counts(np.arange(n), cols.prime_counts, cols.primes))


def test_a_reopen_maps_the_snapshot_and_folds_in_the_rows_above_it(tmp_path):
    path = tmp_path / "s"
    rng = np.random.default_rng(0)
    with Store.open(path, code_dim=D) as store:
        memory = HolographicMemory(store)
        for size in (30, 50, 100):  # snapshots double: 30 → 80 → 180 rows
            memory.store_batch(_items(rng, size))
        written = prime_snapshot.read(path, store.meta.created, 10**9)
        assert written is not None and written.rows == 180
        memory.retire([memory.recent(3)[0].id])  # retired rows stay listed
        memory.store_batch(_items(rng, 20))  # 200 rows: 20 above the snapshot
        expected = _reference(store)
        assert _as_lists(memory._w.primes) == expected
    with Store.open(path, readonly=True) as store:
        index = HolographicMemory(store)._w.primes
        assert index.snapshot_rows == 180
        assert _as_lists(index) == expected
        assert check_integrity(store).ok
    # Appending through a memory opened from the snapshot extends its mapped lists.
    with Store.open(path) as store:
        memory = HolographicMemory(store)
        memory.store_batch(_items(rng, 7))
        assert _as_lists(memory._w.primes) == _reference(store)


def _store_with_snapshot(tmp_path, n=120):
    path = tmp_path / "s"
    with Store.open(path, code_dim=D) as store:
        HolographicMemory(store).store_batch(_items(np.random.default_rng(1), n))
        created = store.meta.created
    assert (path / prime_snapshot.FILE_NAME).exists()
    return path, created


@pytest.mark.parametrize("damage", ["truncated", "garbage", "foreign", "stale"])
def test_an_unusable_snapshot_means_the_counting_sort(tmp_path, damage):
    path, created = _store_with_snapshot(tmp_path)
    target = path / prime_snapshot.FILE_NAME
    if damage == "truncated":
        target.write_bytes(target.read_bytes()[:-8])
    elif damage == "garbage":
        data = bytearray(target.read_bytes())
        data[:8] = b"NOTPRIME"
        target.write_bytes(bytes(data))
    elif damage == "foreign":
        other, _ = _store_with_snapshot(tmp_path / "other", n=120)
        shutil.copyfile(other / prime_snapshot.FILE_NAME, target)
    else:  # covers more rows than the store holds
        snap = prime_snapshot.read(path, created, 10**9)
        assert snap is not None
        bigger = prime_snapshot.PrimeSnapshot(snap.rows + 5, snap.starts.copy(), snap.out.copy())
        prime_snapshot.write(path, created, bigger)
    with Store.open(path, readonly=True) as store:
        index = HolographicMemory(store)._w.primes
        assert index.snapshot_rows == 0
        assert _as_lists(index) == _reference(store)
        report = check_integrity(store)
        assert not report.ok
        assert any("primes.idx is foreign, stale or malformed" in p for p in report.problems)
    # The next writable open writes a good one again.
    with Store.open(path) as store:
        HolographicMemory(store)
    with Store.open(path, readonly=True) as store:
        assert HolographicMemory(store)._w.primes.snapshot_rows == 120
        assert check_integrity(store).ok


def test_check_finds_a_snapshot_whose_lists_differ_from_the_stored_primes(tmp_path):
    path, created = _store_with_snapshot(tmp_path)
    snap = prime_snapshot.read(path, created, 10**9)
    assert snap is not None
    out = snap.out.copy()
    out[5] = (out[5] + 1) % snap.rows  # one row filed under the wrong prime's list
    prime_snapshot.write(path, created, prime_snapshot.PrimeSnapshot(snap.rows, snap.starts, out))
    with Store.open(path, readonly=True) as store:
        report = check_integrity(store)
    assert any("differs from the stored primes" in p for p in report.problems), report.problems


def test_a_backup_carries_the_snapshot_and_an_older_store_gets_one_at_its_first_open(tmp_path):
    path, _ = _store_with_snapshot(tmp_path)
    with Store.open(path) as store:
        target = store.copy(tmp_path / "backup")
    with Store.open(target, readonly=True) as copy:
        index = HolographicMemory(copy)._w.primes
        assert index.snapshot_rows == 120 and _as_lists(index) == _reference(copy)
    # A store with a lexicon snapshot but no prime snapshot (written before this file
    # existed) gets one at its first writable open.
    (path / prime_snapshot.FILE_NAME).unlink()
    with Store.open(path) as store:
        HolographicMemory(store)
    assert (path / prime_snapshot.FILE_NAME).exists()


def test_rows_decoded_out_of_order_fold_in_as_well(tmp_path):
    # The loader of a store without column blocks hands rows in record order: the rows
    # above the snapshot are sorted before they are added.
    from sentient_core.memory.mirror import _prime_index

    path, _ = _store_with_snapshot(tmp_path)
    with Store.open(path) as store:
        HolographicMemory(store).store_batch(_items(np.random.default_rng(4), 30))
        with store.read() as txn:
            n = txn.counters().row_count
            cols = colblocks.load(txn, n)
        assert cols is not None
        starts = np.concatenate([[0], np.cumsum(cols.prime_counts)])
        order = np.random.default_rng(2).permutation(n)
        primes = np.concatenate([cols.primes[starts[r] : starts[r + 1]] for r in order])
        index = _prime_index(store, n, order.astype(np.int64), cols.prime_counts[order], primes)
        assert index.snapshot_rows == 120
        assert _as_lists(index) == _reference(store)


def test_rows_out_of_range_in_a_damaged_snapshot_never_reach_a_recall(tmp_path):
    # The open does not scan every entry (check does): a recall keeps rows inside the mirror.
    path, created = _store_with_snapshot(tmp_path)
    snap = prime_snapshot.read(path, created, 10**9)
    assert snap is not None
    with Store.open(path, readonly=True) as store:
        memory = HolographicMemory(store)
        p = max(memory._w.primes.postings, key=lambda q: memory._w.primes.postings[q].rows.size)
        want = [h.record.id for h in memory.recall_by_primes([p], k=50, touch=False)]
    out = snap.out.copy()
    first = int(snap.starts[p])
    out[first], out[first + 1] = -3, 10**9  # damage two entries of that prime's list
    prime_snapshot.write(path, created, prime_snapshot.PrimeSnapshot(snap.rows, snap.starts, out))
    with Store.open(path, readonly=True) as store:
        got = [
            h.record.id for h in HolographicMemory(store).recall_by_primes([p], k=50, touch=False)
        ]
        assert set(got) <= set(want) and len(got) >= len(want) - 2
        assert not check_integrity(store).ok
