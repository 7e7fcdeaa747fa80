"""The LMDB store: creation, meta and schema checks, records, code blocks, map growth,
a reader in a second process, and misuse errors. Real LMDB files under tmp_path."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import lmdb
import msgspec
import numpy as np
import pytest

from sentient_core.store import (
    DB_NAMES,
    SCHEMA_VERSION,
    CorruptRecordError,
    LinkRecord,
    NotAStoreError,
    SchemaVersionError,
    Store,
    StoreClosedError,
    StoreError,
    StoreFullError,
    StoreNotFoundError,
    StoreUsageError,
    TraceRecord,
    check_integrity,
    codes,
    default_data_dir,
    links,
    log,
    traces,
)
from sentient_core.store.codes import BLOCK_ROWS
from sentient_core.store.env import META_KEY
from sentient_core.store.records import LINKS, TRACES, link_key, u64_key

REPO = Path(__file__).resolve().parents[1]
HELPER = Path(__file__).resolve().parent / "_store_writer.py"
DIM = 8


def run_helper(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, str(HELPER), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def trace(text: str = "hello", **kw) -> TraceRecord:
    return TraceRecord(id=0, row=0, created=1.0e9, last_access=1.0e9, text=text, **kw)


def unit_rows(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def raw_env(path: Path) -> lmdb.Environment:
    return lmdb.open(str(path), max_dbs=64)


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store", code_dim=DIM) as s:
        yield s


# -- data directory ---------------------------------------------------------------------


def test_default_data_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SENTIENT_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "sentient-core"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")  # the XDG spec says: ignore
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "sentient-core"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "sentient-core"
    monkeypatch.setenv("SENTIENT_HOME", str(tmp_path / "sh"))
    assert default_data_dir() == tmp_path / "sh"


def test_open_without_path_uses_sentient_home(monkeypatch, tmp_path):
    monkeypatch.setenv("SENTIENT_HOME", str(tmp_path / "data"))
    with Store.open(code_dim=4) as s:
        assert s.path == tmp_path / "data"
    assert (tmp_path / "data" / "data.mdb").is_file()


# -- creation, meta, reopen ---------------------------------------------------------------


def test_create_writes_meta_and_reopen_keeps_it(tmp_path):
    path = tmp_path / "new" / "nested"
    before = time.time()
    with Store.open(path, code_dim=12) as s:
        meta = s.meta
        assert (meta.format, meta.schema_version, meta.code_dim) == (
            "sentient-core",
            SCHEMA_VERSION,
            12,
        )
        assert meta.block_rows == BLOCK_ROWS
        assert before <= meta.created <= time.time()
        with s.read() as txn:
            c = txn.counters()
            assert (c.next_id, c.trace_count, c.row_count) == (0, 0, 0)
            # Every sub-database exists (entries() raises on a missing one); a new
            # store holds only its header, counters, trace record version and the mark
            # that it keeps the mirror's column blocks.
            assert {name: txn.entries(name) for name in DB_NAMES} == {
                **dict.fromkeys(DB_NAMES, 0),
                "meta": 4,
            }
        s.write(lambda txn: traces.append(txn, [trace("a")], unit_rows(1, 12)))
    with Store.open(path) as s:
        assert s.meta == meta
        assert s.code_dim == 12
        with s.read() as txn:
            assert traces.get(txn, 0).text == "a"
    with Store.open(path, readonly=True) as s:
        assert s.readonly and s.meta == meta


def test_code_dim_is_required_to_create_and_must_match_to_open(tmp_path):
    with pytest.raises(StoreUsageError, match="needs code_dim"):
        Store.open(tmp_path / "a")
    assert not (tmp_path / "a" / "data.mdb").exists()
    Store.open(tmp_path / "b", code_dim=8).close()
    with pytest.raises(StoreUsageError, match="has code_dim 8; caller asked for 16"):
        Store.open(tmp_path / "b", code_dim=16)
    with pytest.raises(StoreUsageError, match="code_dim must be an integer"):
        Store.open(tmp_path / "c", code_dim=0)
    with pytest.raises(StoreUsageError, match="block_rows"):
        Store.open(tmp_path / "c", code_dim=4, block_rows=0)
    assert not (tmp_path / "c").exists()


def test_unknown_sub_database_name_lists_the_names(store):
    with pytest.raises(KeyError) as info:
        store.db("nope")
    for name in DB_NAMES:
        assert name in str(info.value)
    assert set(DB_NAMES) >= {"meta", "traces", "codes", "links", "state", "events"}


def _rewrite_header(path: Path, **changes) -> None:
    with raw_env(path) as env:
        meta_db = env.open_db(b"meta", create=False)
        with env.begin(write=True) as txn:
            header = msgspec.msgpack.decode(txn.get(META_KEY, db=meta_db))
            header.update(changes)
            txn.put(META_KEY, msgspec.msgpack.encode(header), db=meta_db)


@pytest.mark.parametrize("readonly", [False, True])
def test_newer_schema_version_is_refused(tmp_path, readonly):
    path = tmp_path / "s"
    Store.open(path, code_dim=4).close()
    _rewrite_header(path, schema_version=99, something_new=[1, 2])
    with pytest.raises(SchemaVersionError) as info:
        Store.open(path, readonly=readonly)
    msg = str(info.value)
    assert str(path) in msg
    assert "schema version 99" in msg
    assert f"understands {SCHEMA_VERSION}" in msg
    assert "upgrade" in msg
    # The refused open released the environment: it can be opened raw again.
    with raw_env(path):
        pass


def test_foreign_lmdb_environments_are_not_stores(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    with raw_env(other) as env, env.begin(write=True) as txn:
        txn.put(b"k", b"v", db=env.open_db(b"stuff", txn=txn))
    with pytest.raises(NotAStoreError, match="without a meta database"):
        Store.open(other, code_dim=4)
    path = tmp_path / "s"
    Store.open(path, code_dim=4).close()
    _rewrite_header(path, format="someone-else")
    with pytest.raises(NotAStoreError, match="someone-else"):
        Store.open(path)


def test_directory_with_other_files_is_not_a_store_and_is_left_alone(tmp_path):
    path = tmp_path / "docs"
    path.mkdir()
    rng = np.random.default_rng(3)
    for name in ("notes.txt", "photo.jpg", "blob.bin"):
        (path / name).write_bytes(rng.bytes(500))
    before = sorted(os.listdir(path))
    for kwargs in ({"code_dim": 4}, {"readonly": True}):
        with pytest.raises(NotAStoreError) as info:
            Store.open(path, **kwargs)
        assert str(path) in str(info.value) and "not empty" in str(info.value)
    assert sorted(os.listdir(path)) == before  # no data.mdb / lock.mdb dropped in it


def test_file_or_garbage_data_file_is_not_a_store(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(NotAStoreError, match="is a file"):
        Store.open(a_file, code_dim=4)
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "data.mdb").write_bytes(np.random.default_rng(1).bytes(64 * 1024))
    with pytest.raises(NotAStoreError, match="not a readable LMDB file"):
        Store.open(garbage, code_dim=4)


@pytest.mark.parametrize("kwargs", [{"readonly": True}, {"create": False, "code_dim": 4}])
def test_missing_store_without_create_is_a_clear_error(tmp_path, kwargs):
    path = tmp_path / "absent"
    with pytest.raises(StoreNotFoundError, match="no sentient-core store at") as info:
        Store.open(path, **kwargs)
    assert str(path) in str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert not path.exists()


def test_empty_lmdb_left_by_a_crashed_creation_is_initialised(tmp_path):
    path = tmp_path / "half"
    path.mkdir()
    with raw_env(path):  # data.mdb + lock.mdb exist, but no commit ever happened
        pass
    with pytest.raises(StoreNotFoundError, match="empty"):
        Store.open(path, readonly=True)
    with Store.open(path, code_dim=4) as s:
        assert s.meta.code_dim == 4


def test_opening_the_same_store_twice_in_one_process_is_refused(store):
    with pytest.raises(StoreUsageError, match="already open in this process"):
        Store.open(store.path)


def test_closed_store_raises_and_close_is_idempotent(tmp_path):
    s = Store.open(tmp_path / "s", code_dim=4)
    s.close()
    s.close()
    assert s.closed
    with pytest.raises(StoreClosedError, match="closed"):
        s.write(len)
    with pytest.raises(StoreClosedError):
        s.read().__enter__()


def test_store_must_be_opened_not_constructed():
    with pytest.raises(TypeError, match=r"Store\.open"):
        Store("somewhere")


# -- records --------------------------------------------------------------------------------


def full_trace() -> TraceRecord:
    return TraceRecord(
        id=41,
        row=7,
        created=1.7e9,
        last_access=1.7e9 + 5,
        use_count=3,
        success_count=2,
        failure_count=1,
        strength=0.05,
        importance=1.0,
        kind="user",
        source="file:///a.txt",
        text="héllo wörld — ∑",
        topic="greeting",
        keywords=("hello", "world"),
        tags=("t",),
        smf=tuple(float(i) / 16 for i in range(16)),
        primes=(2, 3, 311),
        retired=True,
    )


def test_trace_record_round_trip():
    rec = full_trace()
    buf = TRACES.encode(rec)
    assert TRACES.decode(buf) == rec
    assert TRACES.decode(memoryview(buf)) == rec
    link = LinkRecord(src=1, dst=2, weight=0.25, created=1.0)
    assert LINKS.decode(LINKS.encode(link)) == link


def test_defaults_and_frozen():
    rec = trace()
    assert (rec.v, rec.strength, rec.retired, rec.use_count) == (2, 1.0, False, 0)
    assert rec.smf == (1.0,) + (0.0,) * 15
    with pytest.raises(AttributeError):
        rec.use_count = 5


def _as_dict(rec: TraceRecord) -> dict:
    return msgspec.to_builtins(rec)


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("use_count", -1, "use_count"),
        ("failure_count", -3, "failure_count"),
        ("id", -1, "id"),
        ("strength", 1.6, "strength"),
        ("strength", 0.01, "strength"),
        ("importance", -0.1, "importance"),
        ("smf", [0.0] * 15, "smf"),
        ("primes", [1], "primes"),
        ("kind", "", "kind"),
        ("use_count", "3", "use_count"),
    ],
)
def test_out_of_bounds_records_are_rejected_on_decode(field, value, fragment):
    data = _as_dict(full_trace())
    data[field] = value
    with pytest.raises(CorruptRecordError, match=fragment):
        TRACES.decode(msgspec.msgpack.encode(data), where="traces/41")


def test_unknown_field_and_garbage_are_corrupt_records():
    data = _as_dict(full_trace())
    data["surprise"] = 1
    with pytest.raises(CorruptRecordError, match="surprise"):
        TRACES.decode(msgspec.msgpack.encode(data))
    with pytest.raises(CorruptRecordError):
        TRACES.decode(b"\xc1\x00garbage")


def test_newer_record_version_is_a_schema_error_not_corruption():
    data = _as_dict(full_trace())
    data["v"] = 3
    with pytest.raises(SchemaVersionError, match="schema version 3"):
        TRACES.decode(msgspec.msgpack.encode(data))
    data["field_from_the_future"] = {"x": 1}  # would fail validation first
    with pytest.raises(SchemaVersionError, match="understands 1 and 2"):
        TRACES.decode(msgspec.msgpack.encode(data))


def test_invalid_records_are_never_written(store):
    bad = trace(use_count=-1)  # msgspec does not check bounds at construction
    with pytest.raises(CorruptRecordError, match="refusing to write"):
        store.write(lambda txn: traces.append(txn, [bad], unit_rows(1)))
    with pytest.raises(SchemaVersionError):
        TRACES.encode(trace(v=3))
    with store.read() as txn:
        assert txn.counters().trace_count == 0
        assert codes.row_count(txn) == 0


def test_stored_record_with_newer_version_raises_on_get(store):
    store.write(lambda txn: traces.append(txn, [trace()], unit_rows(1)))
    data = _as_dict(full_trace()) | {"id": 0, "row": 0, "v": 3}

    def sneak(txn):
        txn.put("traces", u64_key(0), msgspec.msgpack.encode(data))

    store.write(sneak)
    with store.read() as txn, pytest.raises(SchemaVersionError, match="traces/0"):
        traces.get(txn, 0)


# -- traces and links through the store ----------------------------------------------------


def test_put_traces_assigns_ids_and_rows_and_counters(store):
    first = store.write(
        lambda txn: traces.append(txn, [trace("a"), trace("b")], unit_rows(2, seed=1))
    )
    second = store.write(lambda txn: traces.append(txn, [trace("c")], unit_rows(1, seed=2)))
    assert [(r.id, r.row, r.text) for r in first + second] == [
        (0, 0, "a"),
        (1, 1, "b"),
        (2, 2, "c"),
    ]
    with store.read() as txn:
        c = txn.counters()
        assert (c.next_id, c.trace_count, c.row_count) == (3, 3, 3)
        assert traces.count(txn) == 3
        assert [r.text for r in traces.iter_range(txn)] == ["a", "b", "c"]
        assert [r.id for r in traces.iter_range(txn, start=1, stop=2)] == [1]
        assert list(traces.iter_range(txn, start=9)) == []
        assert traces.get(txn, 2) == second[0]
        assert traces.get(txn, 3) is None
        np.testing.assert_array_equal(codes.read_row(txn, 2), unit_rows(1, seed=2)[0])


def test_put_traces_checks_its_inputs(store):
    with pytest.raises(StoreUsageError, match="one code row per record"):
        store.write(lambda txn: traces.append(txn, [trace()], unit_rows(2)))
    with pytest.raises(TypeError, match="float32"):
        store.write(lambda txn: traces.append(txn, [trace()], unit_rows(1).astype(np.float64)))
    with pytest.raises(ValueError, match=rf"\(n, {DIM}\)"):
        store.write(lambda txn: traces.append(txn, [trace()], unit_rows(1, dim=DIM + 1)))
    nan = unit_rows(1)
    nan[0, 3] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        store.write(lambda txn: traces.append(txn, [trace()], nan))
    assert check_integrity(store).traces == 0


def test_update_trace_keeps_the_row(store):
    (rec,) = store.write(lambda txn: traces.append(txn, [trace()], unit_rows(1)))
    bumped = msgspec.structs.replace(rec, use_count=rec.use_count + 1, last_access=2.0e9)
    store.write(lambda txn: traces.update(txn, bumped))
    with store.read() as txn:
        assert traces.get(txn, rec.id) == bumped
    with pytest.raises(StoreUsageError, match="owns code row 0"):
        store.write(lambda txn: traces.update(txn, msgspec.structs.replace(rec, row=5)))
    with pytest.raises(KeyError, match="no trace 9"):
        store.write(lambda txn: traces.update(txn, msgspec.structs.replace(rec, id=9)))


def test_links(store):
    store.write(lambda txn: traces.append(txn, [trace()] * 4, unit_rows(4)))

    def link_up(txn):
        for src, dst, w in [(0, 1, 0.5), (0, 3, 1.0), (1, 0, 0.2), (2, 3, 0.9)]:
            links.put(txn, LinkRecord(src=src, dst=dst, weight=w, created=1.0))

    store.write(link_up)
    with store.read() as txn:
        assert [(lk.src, lk.dst) for lk in links.iter_from(txn, 0)] == [(0, 1), (0, 3)]
        assert [(lk.src, lk.dst) for lk in links.iter_from(txn, 3)] == []
        assert len(list(links.iter_from(txn))) == 4
        assert links.get(txn, 2, 3).weight == 0.9
        assert links.get(txn, 3, 2) is None
    with pytest.raises(KeyError, match="no trace 7"):
        store.write(lambda txn: links.put(txn, LinkRecord(src=0, dst=7, weight=1, created=1)))
    assert store.write(lambda txn: links.delete(txn, 0, 1)) is True
    assert store.write(lambda txn: links.delete(txn, 0, 1)) is False
    assert check_integrity(store).links == 3


def test_append_log(store):
    seqs = store.write(lambda txn: [log.append(txn, "events", b"e%d" % i) for i in range(3)])
    seqs += [store.write(lambda txn: log.append(txn, "events", b"later"))]
    assert seqs == [0, 1, 2, 3]
    with store.read() as txn:
        assert [bytes(v) for _, v in txn.cursor("events")] == [b"e0", b"e1", b"e2", b"later"]


# -- code blocks ----------------------------------------------------------------------------

B = BLOCK_ROWS


@pytest.mark.parametrize(
    "sizes",
    [
        [1, B - 1, B, int(2.5 * B)],  # fills block 0 exactly, then one full, then 2.5 blocks
        [3, 5, B + 7, 0, B - 1, 2],  # every append starts inside a partial block
    ],
)
def test_code_blocks_round_trip_across_block_boundaries(store, sizes):
    expected = np.empty((0, DIM), dtype=np.float32)
    for call, n in enumerate(sizes):
        rows = unit_rows(n, seed=100 + call)
        first = store.write(lambda txn, rows=rows: codes.append_rows(txn, rows))
        assert first == expected.shape[0]
        expected = np.concatenate([expected, rows])
        with store.read() as txn:
            assert codes.row_count(txn) == expected.shape[0]
            np.testing.assert_array_equal(codes.read_all(txn), expected)
            blocks = [(start, blk.shape[0]) for start, blk in codes.iter_blocks(txn)]
    total = expected.shape[0]
    assert total == sum(sizes)
    # Contiguous blocks of B rows, only the last one partial.
    assert blocks == [(s, min(B, total - s)) for s in range(0, total, B)]
    rng = np.random.default_rng(5)
    edges = [0, 1, B - 1, B, B + 1, 2 * B, total - 1, total]
    ranges = [(a, b) for a in edges for b in edges if a <= b <= total]
    ranges += [tuple(sorted(rng.integers(0, total + 1, 2))) for _ in range(20)]
    with store.read(buffers=False) as txn:
        for a, b in ranges:
            np.testing.assert_array_equal(codes.read_rows(txn, a, b), expected[a:b])
        out = np.full((total + 5, DIM), -1, dtype=np.float32)
        np.testing.assert_array_equal(codes.read_all(txn, out=out), expected)
        assert np.all(out[total:] == -1)
        with pytest.raises(IndexError):
            codes.read_rows(txn, 0, total + 1)
        for a in {e for e in edges}:  # the first ``rows`` rows only, the rest untouched
            part = np.full((total, DIM), -1, dtype=np.float32)
            np.testing.assert_array_equal(codes.read_all(txn, out=part, rows=a), expected[:a])
            assert np.all(part[a:] == -1)
        with pytest.raises(StoreUsageError):
            codes.read_all(txn, rows=total + 1)


def test_read_all_out_must_fit(store):
    store.write(lambda txn: codes.append_rows(txn, unit_rows(3)))
    with store.read() as txn, pytest.raises(StoreUsageError, match="out must be"):
        codes.read_all(txn, out=np.empty((2, DIM), np.float32))


def test_code_views_outlive_the_transaction_later_appends_and_the_store(tmp_path):
    # Rows below the count never change: a view of the mapped file stays right after
    # the transaction, after appends that remap the file, and after the store closes.
    store = Store.open(tmp_path / "v", code_dim=DIM)
    rows = unit_rows(10)
    store.write(lambda txn: codes.append_rows(txn, rows))
    with store.read() as txn:
        views = [blk for _, blk in codes.iter_blocks(txn)]
    for i in range(5):
        store.write(lambda txn, i=i: codes.append_rows(txn, unit_rows(B + 3, seed=i)))
    more = store.code_file.rows(10 + 5 * (B + 3))
    store.close()
    np.testing.assert_array_equal(views[0], rows)
    np.testing.assert_array_equal(more[:10], rows)
    np.testing.assert_array_equal(more[-(B + 3) :], unit_rows(B + 3, seed=4))


# -- write semantics, map growth ------------------------------------------------------------


def test_failed_write_commits_nothing(store):
    def half(txn):
        traces.append(txn, [trace()], unit_rows(1))
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        store.write(half)
    with store.read() as txn:
        assert txn.counters().trace_count == 0
    assert check_integrity(store).ok


def test_map_grows_on_map_full_and_data_survives(tmp_path):
    path = tmp_path / "tiny"
    dim, per_batch, batches = 64, 50, 40
    calls = 0
    with Store.open(path, code_dim=dim, map_size=64 * 1024) as s:
        start = s.map_size
        for b in range(batches):
            recs = [trace(f"{b}-{i} " + "x" * 2000) for i in range(per_batch)]

            def add(txn, recs=recs, b=b):
                nonlocal calls
                calls += 1
                return traces.append(txn, recs, unit_rows(per_batch, dim, seed=b))

            s.write(add)
        assert s.map_grows >= 5
        assert calls == batches + s.map_grows  # each growth re-ran fn once from scratch
        assert s.map_size >= start * 2**s.map_grows
        # One transaction bigger than twice the current map: grows repeatedly.
        big = [trace("y" * 4000) for _ in range(2000)]
        s.write(lambda txn: traces.append(txn, big, unit_rows(2000, dim, seed=999)))
    with Store.open(path, readonly=True) as s, s.read() as txn:
        assert txn.counters().trace_count == batches * per_batch + 2000
        all_rows = codes.read_all(txn)
        for b in (0, batches // 2, batches - 1):
            np.testing.assert_array_equal(
                all_rows[b * per_batch : (b + 1) * per_batch], unit_rows(per_batch, dim, seed=b)
            )
            assert traces.get(txn, b * per_batch + 7).text.startswith(f"{b}-7 ")
        np.testing.assert_array_equal(all_rows[-2000:], unit_rows(2000, dim, seed=999))
    assert os.path.getsize(path / "data.mdb") > 8 * 2**20
    with Store.open(path, readonly=True) as s:
        report = check_integrity(s)
    assert report.ok, report.problems
    assert report.traces == report.rows == batches * per_batch + 2000


def test_map_never_grows_past_max_map_size(tmp_path):
    with Store.open(tmp_path / "s", code_dim=DIM, map_size=64 * 1024, max_map_size=256 * 1024) as s:
        s.write(lambda txn: traces.append(txn, [trace("small")], unit_rows(1)))
        with pytest.raises(StoreFullError, match="max_map_size"):
            s.write(lambda txn: traces.append(txn, [trace("z" * 1_000_000)], unit_rows(1)))
        with s.read() as txn:
            assert txn.counters().trace_count == 1
        assert check_integrity(s).ok


def test_writing_while_this_thread_reads_is_refused_not_a_deadlock(tmp_path):
    with Store.open(tmp_path / "s", code_dim=DIM, map_size=64 * 1024) as s:
        big = [trace("q" * 300_000)]  # needs a bigger map: growth must wait for readers
        with s.read(), pytest.raises(StoreUsageError, match="holds a read transaction"):
            s.write(lambda txn: traces.append(txn, big, unit_rows(1)))
        s.write(lambda txn: traces.append(txn, big, unit_rows(1)))
        assert s.map_grows >= 1

        def read_inside_write(txn):  # a snapshot read inside a write is fine
            with s.read() as snap:
                before = snap.counters().trace_count
            traces.append(txn, big, unit_rows(1))
            return before, txn.counters().trace_count

        assert s.write(read_inside_write) == (1, 2)


def test_growth_waits_for_readers_in_other_threads(tmp_path):
    """Two reader threads (one nesting a second snapshot) while a writer thread grows
    the map. Everything runs in daemon threads so that a deadlock fails the test
    instead of hanging it."""
    errors: list[BaseException] = []
    done = threading.Event()
    reads = [0, 0]
    with Store.open(tmp_path / "s", code_dim=DIM, map_size=64 * 1024) as s:

        def reader(slot: int, nested: bool) -> None:
            try:
                while not done.is_set():
                    with s.read() as txn:
                        n = txn.counters().trace_count
                        assert codes.read_all(txn).shape == (n, DIM)
                        if n:
                            assert traces.get(txn, n - 1).text.startswith(str(n - 1))
                        if nested:  # a second snapshot while holding the first
                            with s.read() as inner:
                                assert inner.counters().trace_count >= n
                    reads[slot] += 1
            except BaseException as exc:  # reported to the main thread
                errors.append(exc)

        def writer() -> None:
            try:
                for i in range(200):
                    s.write(
                        lambda txn, i=i: traces.append(
                            txn, [trace(f"{i} " + "w" * 5000)], unit_rows(1)
                        )
                    )
            except BaseException as exc:
                errors.append(exc)
            finally:
                done.set()

        threads = [
            threading.Thread(target=reader, args=(0, False), daemon=True),
            threading.Thread(target=reader, args=(1, True), daemon=True),
            threading.Thread(target=writer, daemon=True),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "deadlock"
        assert errors == []
        assert s.map_grows >= 3
        with s.read() as txn:
            assert txn.counters().trace_count == 200
    assert min(reads) > 0


def test_nested_and_readonly_writes_are_refused(store, tmp_path):
    with pytest.raises(StoreUsageError, match="inside a write"):
        store.write(lambda txn: store.write(len))
    Store.open(tmp_path / "ro", code_dim=4).close()
    with (
        Store.open(tmp_path / "ro", readonly=True) as ro,
        pytest.raises(StoreUsageError, match="read-only"),
    ):
        ro.write(len)


# -- other processes ------------------------------------------------------------------------


def test_reader_in_a_second_process_sees_committed_data(store):
    def summary() -> dict:
        with store.read() as txn:
            matrix = codes.read_all(txn)
            texts = hashlib.sha256()
            for rec in traces.iter_range(txn):
                texts.update(rec.text.encode())
            return {
                "traces": txn.counters().trace_count,
                "rows": int(matrix.shape[0]),
                "codes_sha256": hashlib.sha256(matrix.tobytes()).hexdigest(),
                "texts_sha256": texts.hexdigest(),
            }

    for step in range(2):  # the writer keeps the store open the whole time
        recs = [trace(f"step {step} #{i}") for i in range(30)]
        store.write(
            lambda txn, recs=recs, step=step: traces.append(txn, recs, unit_rows(30, seed=step))
        )
        done = run_helper("read-once", str(store.path))
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        assert seen == summary()
        assert seen["traces"] == 30 * (step + 1)


def test_using_a_store_across_fork_raises(tmp_path):
    done = run_helper("fork-misuse", str(tmp_path / "f"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("after fork, never across it") == 2
    assert "parent: child exit 10" in done.stdout


# -- integrity ------------------------------------------------------------------------------


def _populated(store, n=5):
    store.write(lambda txn: traces.append(txn, [trace(str(i)) for i in range(n)], unit_rows(n)))
    store.write(lambda txn: links.put(txn, LinkRecord(src=0, dst=1, weight=1, created=1)))


def test_integrity_ok_on_a_healthy_store(store):
    _populated(store)
    report = check_integrity(store)
    assert report.ok and report.problems == ()
    assert (report.traces, report.rows, report.links) == (5, 5, 1)


@pytest.mark.parametrize(
    ("damage", "fragment"),
    [
        (lambda txn: txn.delete("traces", u64_key(2)), "1 code row(s) belong to no trace"),
        (lambda txn: txn.put("codes", u64_key(0), b"\x00" * 12), "code blocks remain"),
        (lambda txn: codes.append_rows(txn, unit_rows(2)), "2 code row(s) belong to no trace"),
        (
            lambda txn: txn.put(
                "links", link_key(0, 9), LINKS.encode(LinkRecord(src=0, dst=9, weight=1, created=1))
            ),
            "missing trace 9",
        ),
        (
            lambda txn: txn.set_counters(msgspec.structs.replace(txn.counters(), trace_count=7)),
            "counters say 7 traces",
        ),
        (
            lambda txn: txn.set_counters(msgspec.structs.replace(txn.counters(), next_id=2)),
            "next id 2",
        ),
        (lambda txn: txn.put("traces", u64_key(3), b"\x93junk"), "traces/3"),
        (
            lambda txn: txn.put(
                "traces",
                u64_key(4),
                TRACES.encode(msgspec.structs.replace(traces.get(txn, 4), row=1)),
            ),
            "belong to several traces",
        ),
    ],
)
def test_integrity_reports_damage(store, damage, fragment):
    _populated(store)
    store.write(damage)
    report = check_integrity(store)
    assert not report.ok
    assert any(fragment in p for p in report.problems), report.problems


def test_store_errors_share_one_base():
    for exc in (
        NotAStoreError,
        SchemaVersionError,
        StoreNotFoundError,
        CorruptRecordError,
        StoreFullError,
        StoreUsageError,
        StoreClosedError,
    ):
        assert issubclass(exc, StoreError)


def test_a_new_store_is_created_beside_the_data_dir_files_and_nothing_else(tmp_path):
    # A user writes sentient.toml before the first run; the control and token files
    # belong to the data dir too. Any other file still means "not a data directory".
    path = tmp_path / "data"
    path.mkdir()
    (path / "sentient.toml").write_text("[learner]\n")
    (path / "server.token").write_text("x")
    with Store.open(path, code_dim=8) as store:
        assert store.meta.code_dim == 8
    assert (path / "sentient.toml").read_text() == "[learner]\n"
    other = tmp_path / "other"
    other.mkdir()
    (other / "sentient.toml").write_text("")
    (other / "notes.txt").write_text("mine")
    with pytest.raises(NotAStoreError, match=r"not empty \(1 entries: notes.txt\)"):
        Store.open(other, code_dim=8)


def test_a_data_dir_holding_only_incoming_files_is_where_the_first_run_starts(tmp_path, capsys):
    # The README's "put your files in incoming/" before any store exists: learn, ingest and
    # serve open the directory as a new store and the learner answers from those files.
    from sentient_core.cli import main

    data = tmp_path / "data"
    (data / "incoming").mkdir(parents=True)
    src = Path(__file__).resolve().parents[1] / "bench" / "data" / "debian" / "corpus"
    (data / "incoming" / "curl.changelog.txt").write_text((src / "curl.changelog.txt").read_text())
    args = ["--data-dir", str(data)]
    assert main(["learn", "--iterations", "2", "--interval", "0", *args]) == 0
    assert main(["recall", "curl security fix", "-k", "1", "--json", *args]) == 0
    out = capsys.readouterr().out
    assert "incoming/curl.changelog.txt" in out
    assert (data / "incoming" / "curl.changelog.txt").is_file()  # the user's file is left
    # A folder of another name is still "not a data directory".
    other = tmp_path / "other"
    (other / "mine").mkdir(parents=True)
    with pytest.raises(NotAStoreError, match=r"1 entries: mine"):
        Store.open(other, code_dim=8)
