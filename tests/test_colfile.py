"""The checkpoint of the mirror's columns (columns.ckpt, schema 3): an open that maps it,
reads the blocks changed below it and the rows above it from LMDB, gives the mirror
that unpacking every block gives — through appends, updates, retirements, decay,
reopens, backups and the migration from schema 2; an unusable checkpoint (missing,
foreign, truncated, a token its snapshot does not name, a crash between its rename
and the commit) means unpacking every block; ``check`` compares it with the blocks."""

from __future__ import annotations

import shutil
import threading

import msgspec
import numpy as np
import pytest

from sentient_core.memory import HolographicMemory, NewTrace, lexical_persist
from sentient_core.memory.mirror import load
from sentient_core.store import Store, check_integrity, colblocks, colfile
from sentient_core.store.records import SCHEMA_VERSION
from tests._legacy_store import downgrade_to_schema_1, downgrade_to_schema_2

D = 16
COLUMNS = [name for name, _, _ in colfile.COLUMNS]


@pytest.fixture(autouse=True)
def _small_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical_persist, "TAIL_MIN", 8)


@pytest.fixture
def mapped(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What each section's :func:`colfile.map_over` answered (True: mapped, no copy)."""
    calls: list[bool] = []
    real = colfile.map_over

    def watching(target, ckpt, name):
        calls.append(real(target, ckpt, name))
        return calls[-1]

    monkeypatch.setattr(colfile, "map_over", watching)
    return calls


def _items(rng: np.random.Generator, n: int) -> list[NewTrace]:
    words = [f"w{i:02d}" for i in range(40)]
    return [
        NewTrace(
            text=" ".join(rng.choice(words, int(rng.integers(1, 12)))),
            code=rng.standard_normal(D).astype(np.float32),
        )
        for _ in range(n)
    ]


def _state(memory: HolographicMemory) -> dict[str, np.ndarray]:
    view = memory.view()
    m = view.mirror
    out = {name: getattr(m, name)[: view.n].copy() for name in COLUMNS}
    out["active"] = np.array([m.active])
    out["primes"] = np.array(
        sorted((p, tuple(post.rows.tolist())) for p, post in view.primes.postings.items()),
        dtype=object,
    )
    return out


def _reference(store: Store) -> dict[str, np.ndarray]:
    """The mirror made by unpacking every block (no checkpoint)."""
    with store.read() as txn:
        m, primes = load(txn, store.code_dim, store, checkpoint=False)
    out = {name: getattr(m, name)[: m.n].copy() for name in COLUMNS}
    out["active"] = np.array([m.active])
    out["primes"] = np.array(
        sorted((p, tuple(post.rows.tolist())) for p, post in primes.postings.items()),
        dtype=object,
    )
    return out


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def _built(path, n=150, seed=0):
    rng = np.random.default_rng(seed)
    with Store.open(path, code_dim=D) as store:
        memory = HolographicMemory(store)
        memory.store_batch(_items(rng, n))
        memory._w.persist_lexicon()  # the checkpoint over every row
        with store.read() as txn:
            assert colblocks.checkpoint_rows(txn) == n
    return rng


def test_a_reopen_maps_the_checkpoint_and_reads_changed_blocks_and_new_rows(tmp_path, mapped):
    path = tmp_path / "s"
    rng = _built(path, n=300)
    with Store.open(path) as store:
        memory = HolographicMemory(store)
        assert mapped and all(mapped)
        recent = memory.recent(5)
        memory.retire([recent[0].id])  # block 4, below the checkpoint
        first = memory.get(3)
        memory.update([msgspec.structs.replace(first, strength=0.123, smf=(0.5,) * 16)])
        memory.store_batch(_items(rng, 20))  # rows 300 … 319, above it
        with store.read() as txn:
            assert colblocks.dirty_blocks(txn) == [0, 4]
        expected = _reference(store)
        _same(_state(memory), expected)
    mapped.clear()
    for readonly in (True, False):
        with Store.open(path, readonly=readonly) as store:
            memory = HolographicMemory(store)
            assert len(mapped) == len(COLUMNS) and all(mapped)
            mapped.clear()
            _same(_state(memory), expected)
            assert check_integrity(store).ok


def test_a_decay_marks_the_blocks_it_rewrites_and_the_open_reads_them(tmp_path):
    path = tmp_path / "s"
    _built(path, n=200)
    with Store.open(path) as store:
        memory = HolographicMemory(store)
        changed = memory.decay(now=memory.get(0).created + 90 * 86400.0, half_life_days=3)
        assert changed == 200
        expected = _reference(store)
    with Store.open(path, readonly=True) as store:
        with store.read() as txn:
            assert colblocks.dirty_blocks(txn) == [0, 1, 2, 3]
        _same(_state(HolographicMemory(store)), expected)


def test_the_mirror_writes_its_own_rows_never_the_file(tmp_path):
    path = tmp_path / "s"
    _built(path, n=100)
    before = (path / colfile.FILE_NAME).read_bytes()
    with Store.open(path) as store:
        memory = HolographicMemory(store)
        memory.retire([memory.get(7).id])  # masks row 7 in the mapped valid array
        memory.update([msgspec.structs.replace(memory.get(8), strength=0.5)])
        m = memory.view().mirror
        assert m.valid[7] == 0 and m.strength[8] == 0.5
    assert (path / colfile.FILE_NAME).read_bytes() == before


@pytest.mark.parametrize("damage", ["missing", "truncated", "token", "foreign", "rows"])
def test_an_unusable_checkpoint_means_unpacking_every_block(tmp_path, damage, mapped):
    path = tmp_path / "s"
    _built(path, n=120)
    file = path / colfile.FILE_NAME
    if damage == "missing":
        file.unlink()
    elif damage == "truncated":
        file.write_bytes(file.read_bytes()[:-1])
    elif damage == "token":
        raw = bytearray(file.read_bytes())
        raw[24] ^= 1  # the token in the header
        file.write_bytes(bytes(raw))
    elif damage == "foreign":  # the checkpoint of another store of the same rows
        _built(tmp_path / "t", n=120)
        shutil.copyfile(tmp_path / "t" / colfile.FILE_NAME, file)
    else:  # a checkpoint of more rows than the snapshot's
        with Store.open(path) as store:
            store.write(lambda txn: colblocks.forget(txn))
            store.write(
                lambda txn: txn.raw.put(
                    colblocks.CKPT_KEY,
                    b"\0" * 16 + (10**6).to_bytes(8, "little"),
                    db=txn.db("meta"),
                )
            )
    with Store.open(path, readonly=True) as store:
        state = _state(HolographicMemory(store))
        assert not mapped
        _same(state, _reference(store))
        if damage != "missing":
            assert any("columns.ckpt" in p for p in check_integrity(store).problems)
    with Store.open(path) as store:  # a writable open writes a new one
        HolographicMemory(store)
        assert check_integrity(store).ok
    with Store.open(path, readonly=True) as store:
        mapped.clear()
        _same(_state(HolographicMemory(store)), state)
        assert mapped and all(mapped)


def test_a_crash_between_the_rename_and_the_commit_leaves_a_checkpoint_no_one_uses(
    tmp_path, mapped
):
    path = tmp_path / "s"
    rng = _built(path, n=100)
    with Store.open(path) as store:
        memory = HolographicMemory(store)
        memory.update([msgspec.structs.replace(memory.get(2), strength=0.25)])
        memory.store_batch(_items(rng, 10))
        real = colfile.write

        def crashing(txn, *args, **kwargs):
            real(txn, *args, **kwargs)  # renamed over the old file
            raise OSError(5, "the process died before LMDB committed")

        colfile.write = crashing
        try:
            assert not lexical_persist.save_columns(store)
        finally:
            colfile.write = real
        expected = _reference(store)
    mapped.clear()
    with Store.open(path, readonly=True) as store:
        with store.read() as txn:
            assert colblocks.checkpoint_rows(txn) == 100  # the old one is still named
            assert colblocks.dirty_blocks(txn) == [0]
        _same(_state(HolographicMemory(store)), expected)
        assert not mapped  # the file holds the newer token: unused


def test_check_finds_a_checkpoint_row_that_differs_from_the_blocks(tmp_path):
    path = tmp_path / "s"
    _built(path, n=100)
    offsets, _ = colfile.layout(100)
    raw = bytearray((path / colfile.FILE_NAME).read_bytes())
    raw[offsets["strength"] + 8 * 70] ^= 0x40  # row 70's strength
    (path / colfile.FILE_NAME).write_bytes(bytes(raw))
    with Store.open(path, readonly=True) as store:
        problems = check_integrity(store).problems
    assert any("disagree" in p and "[70]" in p for p in problems)


def test_a_backup_carries_the_checkpoint_and_the_copy_maps_it(tmp_path, mapped):
    path = tmp_path / "s"
    _built(path, n=90)
    with Store.open(path, readonly=True) as store:
        expected = _state(HolographicMemory(store))
        store.copy(tmp_path / "b")
    assert (tmp_path / "b" / colfile.FILE_NAME).exists()
    mapped.clear()
    with Store.open(tmp_path / "b", readonly=True) as store:
        _same(_state(HolographicMemory(store)), expected)
        assert mapped and all(mapped)
        assert check_integrity(store).ok


@pytest.mark.parametrize("older", [2, 1])
def test_an_older_store_reads_as_before_and_becomes_3_with_a_checkpoint(tmp_path, older, mapped):
    path = tmp_path / "s"
    _built(path, n=130)
    with Store.open(path, readonly=True) as store:
        expected = _state(HolographicMemory(store))
    (downgrade_to_schema_2 if older == 2 else downgrade_to_schema_1)(path)
    assert not (path / colfile.FILE_NAME).exists()
    mapped.clear()
    with Store.open(path, readonly=True) as store:
        assert store.meta.schema_version == older
        _same(_state(HolographicMemory(store)), expected)
        assert not mapped and check_integrity(store).ok
    with Store.open(path) as store:
        assert store.meta.schema_version == SCHEMA_VERSION == 3
        _same(_state(HolographicMemory(store)), expected)
        assert (path / colfile.FILE_NAME).exists() and check_integrity(store).ok
    mapped.clear()
    with Store.open(path, readonly=True) as store:
        _same(_state(HolographicMemory(store)), expected)
        assert mapped and all(mapped)


@pytest.mark.parametrize(("first", "stop"), [(0, 300), (0, 1), (63, 65), (64, 128), (100, 299)])
def test_unpacking_a_range_gives_the_structured_reading(tmp_path, first, stop):
    path = tmp_path / "s"
    _built(path, n=300)
    with Store.open(path, readonly=True) as store, store.read() as txn:
        cols = colblocks.load(txn, 300)
        assert cols is not None
        out = {
            name: np.full((300, *shape), 7, dtype=dtype) for name, shape, dtype in colfile.COLUMNS
        }
        counts = np.zeros(stop - first, np.int64)
        primes = np.zeros(8 * (stop - first), np.int64)
        got = colfile.unpack(txn, first, stop, out, (counts, primes))
    sl = slice(first, stop)
    np.testing.assert_array_equal(out["row_id"][sl], cols.ids[sl])
    np.testing.assert_array_equal(out["valid"][sl], (~cols.retired[sl]).astype(np.uint8))
    for name in ("created", "last_access", "strength", "importance", "smf"):
        np.testing.assert_array_equal(out[name][sl], getattr(cols, name)[sl])
    assert (out["row_id"][:first] == 7).all() and (out["row_id"][stop:] == 7).all()
    np.testing.assert_array_equal(counts, cols.prime_counts[sl])
    lo = int(cols.prime_counts[:first].sum())
    np.testing.assert_array_equal(primes[:got], cols.primes[lo : lo + int(counts.sum())])


def test_a_checkpoint_written_after_a_readers_snapshot_began_is_not_used_by_it(tmp_path, mapped):
    path = tmp_path / "s"
    _built(path, n=200)
    with Store.open(path) as store:
        memory = HolographicMemory(store)
        memory.update([msgspec.structs.replace(memory.get(5), strength=0.75)])
        with store.read() as txn:  # a reader's snapshot: the checkpoint of 200 rows, block 0 dirty
            expected = _reference(store)

            # Meanwhile a writer (another thread) updates a row of a block this snapshot
            # reads from the file and writes a new checkpoint of the same 200 rows.
            def writer() -> None:
                memory.update([msgspec.structs.replace(memory.get(100), strength=0.5)])
                saved.append(lexical_persist.save_columns(store))

            saved: list[bool] = []
            thread = threading.Thread(target=writer)
            thread.start()
            thread.join()
            assert saved == [True]
            mapped.clear()
            m, _ = load(txn, store.code_dim, store)
            assert not mapped  # the file's token is not the one this snapshot names
            for name in COLUMNS:
                np.testing.assert_array_equal(getattr(m, name)[: m.n], expected[name], name)
        mapped.clear()
        _same(_state(HolographicMemory(store)), _reference(store))
        assert mapped and all(mapped)


def test_the_file_and_its_rename_are_synced_before_lmdb_commits_the_token(tmp_path, monkeypatch):
    path = tmp_path / "s"
    rng = _built(path, n=80)
    seen: list[tuple[int, bool]] = []
    with Store.open(path, durable=False) as store:  # synced even when commits are not
        HolographicMemory(store).store_batch(_items(rng, 40))
        real = colfile.os.fsync

        def watching(fd):
            real(fd)
            with store.read() as txn:  # what a crash at this instant would leave committed
                seen.append((colblocks.checkpoint_rows(txn), (path / colfile.FILE_NAME).exists()))

        monkeypatch.setattr(colfile.os, "fsync", watching)
        assert lexical_persist.save_columns(store)
        monkeypatch.undo()
        with store.read() as txn:
            assert colblocks.checkpoint_rows(txn) == 120
    assert seen == [(80, True), (80, True)]  # the file's data, then the directory's rename
