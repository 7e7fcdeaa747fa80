"""The code file (schema 2) and the migration of schema-1 stores.

Real LMDB stores, real files: a schema-1 store is made the way older versions laid it
out (tests/_legacy_store.py) from a store this version wrote, so both hold the same
traces and every answer can be compared.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.store import Store, check_integrity, codefile, codes
from sentient_core.store.errors import CorruptRecordError
from sentient_core.store.records import SCHEMA_VERSION
from tests._legacy_store import downgrade_to_schema_1

DIM = 16
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
]


def _items(rng: np.random.Generator, n: int) -> list[NewTrace]:
    return [
        NewTrace(
            text=" ".join(rng.choice(WORDS, 6)), code=rng.standard_normal(DIM).astype(np.float32)
        )
        for _ in range(n)
    ]


def _answers(memory: HolographicMemory, rng: np.random.Generator) -> list:
    out = []
    for _ in range(12):
        q = rng.standard_normal(DIM).astype(np.float32)
        hits = memory.recall(q, k=5, touch=False, rank="cosine")
        out.append([(h.record.id, h.score) for h in hits])
        text = " ".join(rng.choice(WORDS, 2))
        for rank in ("bm25", "hybrid"):
            hits = memory.recall(text, k=5, touch=False, rank=rank)
            out.append([(h.record.id, h.score) for h in hits])
    return out


def _built(path, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    with Store.open(path, code_dim=DIM, block_rows=512) as store:
        memory = HolographicMemory(store)
        for _ in range(n // 1000):
            memory.store_batch(_items(rng, 1000))
        with store.read() as txn:
            rows = codes.read_all(txn)
    return rows


def test_a_new_store_keeps_its_codes_in_the_file_and_none_in_lmdb(tmp_path):
    rows = _built(tmp_path / "s")
    assert (tmp_path / "s" / codefile.FILE_NAME).stat().st_size == rows.nbytes
    with Store.open(tmp_path / "s", readonly=True) as store:
        assert store.meta.schema_version == SCHEMA_VERSION == 3
        with store.read() as txn:
            assert txn.raw.stat(store.db("codes"))["entries"] == 0
        assert check_integrity(store).ok


def test_a_schema_1_store_reads_as_before_and_migrates_at_its_first_writable_open(tmp_path):
    path = tmp_path / "s"
    rows = _built(path)
    with Store.open(path, readonly=True) as store:
        expected = _answers(HolographicMemory(store), np.random.default_rng(9))
    assert downgrade_to_schema_1(path) == rows.shape[0]
    assert not (path / codefile.FILE_NAME).exists()
    # Read-only: read from the blocks as they are, nothing written.
    with Store.open(path, readonly=True) as store:
        assert store.meta.schema_version == 1 and store.code_file is None
        assert check_integrity(store).ok
        with store.read() as txn:
            np.testing.assert_array_equal(codes.read_all(txn), rows)
        memory = HolographicMemory(store)
        assert not memory.view().mirror.mapped
        assert _answers(memory, np.random.default_rng(9)) == expected
    assert not (path / codefile.FILE_NAME).exists()
    # Writable: migrated once, the blocks dropped, the answers the same.
    with Store.open(path) as store:
        assert store.meta.schema_version == SCHEMA_VERSION and store.code_file is not None
        with store.read() as txn:
            assert txn.raw.stat(store.db("codes"))["entries"] == 0
            np.testing.assert_array_equal(codes.read_all(txn), rows)
        assert check_integrity(store).ok
        memory = HolographicMemory(store)
        assert memory.view().mirror.mapped
        assert _answers(memory, np.random.default_rng(9)) == expected
        memory.store_batch(_items(np.random.default_rng(5), 10))  # and it goes on
        assert memory.count == rows.shape[0] + 10
        assert check_integrity(store).ok
    with Store.open(path, readonly=True) as store:
        assert store.meta.schema_version == SCHEMA_VERSION


def test_a_migration_that_fails_leaves_schema_1_whole_and_the_next_open_redoes_it(
    tmp_path, monkeypatch
):
    path = tmp_path / "s"
    rows = _built(path)
    downgrade_to_schema_1(path)
    real_write = codefile.CodeFile.write
    calls = []

    def failing(self, first, block, *, durable):
        calls.append(first)
        if len(calls) == 3:  # part of the rows are in the file already
            raise OSError(28, "No space left on device")
        real_write(self, first, block, durable=durable)

    monkeypatch.setattr(codefile.CodeFile, "write", failing)
    with pytest.raises(OSError, match="No space"):
        Store.open(path)
    monkeypatch.undo()
    with Store.open(path, readonly=True) as store:
        assert store.meta.schema_version == 1
        assert check_integrity(store).ok
        with store.read() as txn:
            np.testing.assert_array_equal(codes.read_all(txn), rows)
    with Store.open(path) as store:
        assert store.meta.schema_version == SCHEMA_VERSION and check_integrity(store).ok
        with store.read() as txn:
            np.testing.assert_array_equal(codes.read_all(txn), rows)


def test_rows_of_an_aborted_write_are_not_stored_and_the_next_append_takes_their_place(
    tmp_path,
):
    rng = np.random.default_rng(1)
    with Store.open(tmp_path / "s", code_dim=DIM) as store:
        first = rng.standard_normal((5, DIM)).astype(np.float32)
        store.write(lambda txn: codes.append_rows(txn, first))

        def aborted(txn):
            codes.append_rows(txn, np.full((7, DIM), 9.0, np.float32))
            raise RuntimeError("the transaction fails after writing its rows")

        with pytest.raises(RuntimeError):
            store.write(aborted)
        assert store.code_file.stored_rows() == 12  # in the file, above the count
        with store.read() as txn:
            assert codes.row_count(txn) == 5
            np.testing.assert_array_equal(codes.read_all(txn), first)
        # (bare rows without traces: only the rows' own checks matter here)
        assert not [p for p in check_integrity(store).problems if p.startswith("codes")]
        second = rng.standard_normal((2, DIM)).astype(np.float32)
        assert store.write(lambda txn: codes.append_rows(txn, second)) == 5
        with store.read() as txn:
            np.testing.assert_array_equal(codes.read_all(txn), np.concatenate([first, second]))


def test_a_durable_store_syncs_the_rows_before_lmdb_commits_their_count(tmp_path, monkeypatch):
    seen = []
    with Store.open(tmp_path / "s", code_dim=DIM, durable=True) as store:
        real = os.fdatasync

        def watching(fd):
            real(fd)
            with store.read() as txn:  # what a crash at this instant would leave committed
                seen.append(codes.row_count(txn))

        monkeypatch.setattr(codefile.os, "fdatasync", watching)
        store.write(lambda txn: codes.append_rows(txn, np.ones((3, DIM), np.float32)))
        store.write(lambda txn: codes.append_rows(txn, np.ones((4, DIM), np.float32)))
    assert seen == [0, 3]


def test_a_non_durable_store_does_not_sync_the_file(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(codefile.os, "fdatasync", calls.append)
    with Store.open(tmp_path / "s", code_dim=DIM, durable=False) as store:
        store.write(lambda txn: codes.append_rows(txn, np.ones((3, DIM), np.float32)))
    assert calls == []


@pytest.mark.parametrize(
    ("damage", "fragment"),
    [
        (lambda p: os.truncate(p, 4 * DIM * 2000), "holds 2000 rows; the counters say 3000"),
        (lambda p: p.unlink(), "holds 0 rows; the counters say 3000"),
        ("nan", "row 1234 of codes.f32 is not finite"),
    ],
)
def test_integrity_finds_a_damaged_code_file(tmp_path, damage, fragment):
    path = tmp_path / "s"
    _built(path)
    target = path / codefile.FILE_NAME
    if damage == "nan":
        with open(target, "r+b") as f:
            f.seek(1234 * 4 * DIM + 8)
            f.write(np.float32(np.nan).tobytes())
    else:
        damage(target)
    with Store.open(path, readonly=True) as store:
        report = check_integrity(store)
    assert not report.ok
    assert any(fragment in p for p in report.problems), report.problems


def test_opening_a_memory_whose_code_file_was_truncated_names_the_file(tmp_path):
    path = tmp_path / "s"
    _built(path)
    os.truncate(path / codefile.FILE_NAME, 4 * DIM * 10)
    with (
        Store.open(path, readonly=True) as store,
        pytest.raises(CorruptRecordError, match=r"codes\.f32 holds 10 code rows"),
    ):
        HolographicMemory(store)


def test_a_backup_carries_the_code_file_of_its_snapshot(tmp_path):
    path = tmp_path / "s"
    rows = _built(path)
    with Store.open(path) as store:
        target = store.copy(tmp_path / "backup")
    assert (target / codefile.FILE_NAME).stat().st_size == rows.nbytes
    with Store.open(target, readonly=True) as copy:
        assert check_integrity(copy).ok
        with copy.read() as txn:
            np.testing.assert_array_equal(codes.read_all(txn), rows)


def test_a_backup_holds_every_row_of_a_commit_made_while_it_was_taken(tmp_path):
    # LMDB's copy takes a snapshot of its own, later than the one the backup reads
    # under: a commit between the two must find its rows in the copied file too.
    path = tmp_path / "s"
    _built(path, n=1000)
    with Store.open(path) as store:
        memory = HolographicMemory(store)
        env = store._env

        class CommitFirst:
            def copy(self, *args, **kwargs):
                # Another thread commits (this one holds the backup's read transaction).
                writer = threading.Thread(
                    target=memory.store_batch, args=(_items(np.random.default_rng(3), 700),)
                )
                writer.start()
                writer.join()
                return env.copy(*args, **kwargs)

            def __getattr__(self, name):
                return getattr(env, name)

        store._env = CommitFirst()
        try:
            target = store.copy(tmp_path / "backup")
        finally:
            store._env = env
    with Store.open(target, readonly=True) as copy:
        report = check_integrity(copy)
        assert report.ok, report.problems
        assert report.rows == 1700


_MIGRATE_AND_APPEND = """
import sys
import numpy as np
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.store import Store

with Store.open(sys.argv[1]) as store:
    assert store.meta.schema_version == 3
    rng = np.random.default_rng(8)
    HolographicMemory(store).store_batch(
        [NewTrace(text=f"late arrival {i}", code=rng.standard_normal(16).astype(np.float32))
         for i in range(40)]
    )
"""


def test_a_reader_of_a_schema_1_store_follows_a_migration_made_by_another_process(tmp_path):
    path = tmp_path / "s"
    rows = _built(path, n=1000)
    downgrade_to_schema_1(path)
    with Store.open(path, readonly=True) as store:
        memory = HolographicMemory(store)
        assert store.code_file is None
        root = Path(__file__).resolve().parents[1]
        done = subprocess.run(
            [sys.executable, "-c", _MIGRATE_AND_APPEND, str(path)],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        assert memory.refresh() == 40  # the new rows, read from the file the writer made
        assert store.code_file is not None
        hits = memory.recall("late arrival", k=3, touch=False, rank="bm25")
        assert all(h.record.text.startswith("late arrival") for h in hits)
        with store.read() as txn:
            np.testing.assert_array_equal(codes.read_rows(txn, 0, 1000), rows)
        assert check_integrity(store).ok


def test_read_rows_copies_the_rows_asked_for_and_names_a_short_file(tmp_path):
    # pread of a few rows (the compact scans' candidates): runs of consecutive rows in one
    # read, single rows, none; the same values as the mapped view.
    rng = np.random.default_rng(4)
    with Store.open(tmp_path / "s", code_dim=DIM) as store:
        HolographicMemory(store).store_batch(_items(rng, 300))
        file = store.code_file
        assert file is not None
        every = file.rows(300)
        for rows in ([], [0], [299], [3, 4, 5, 9, 10, 200, 201, 202, 299], list(range(300))):
            got = file.read_rows(np.array(rows, dtype=np.int64))
            assert got.dtype == np.float32 and got.shape == (len(rows), DIM)
            assert np.array_equal(got, every[rows])
        with pytest.raises(CorruptRecordError, match="ends before row 300"):
            file.read_rows(np.array([5, 300]))
