"""Trace records keep their dominant primes as little-endian uint16 bytes (version 2):
round trip, version 1 records (a msgpack array) still read and upgraded once, bad
bytes refused, and the bulk columns equal a per-record decode. Real LMDB files."""

from __future__ import annotations

import struct

import msgspec
import numpy as np
import pytest

from sentient_core.core import Core
from sentient_core.encoder.bank import check_bank
from sentient_core.errors import ArgumentError
from sentient_core.memory import HolographicMemory
from sentient_core.store import CorruptRecordError, Store, TraceRecord, check_integrity, traces
from sentient_core.store.columns import TraceColumns, iter_chunks
from sentient_core.store.records import MAX_PRIME, TRACES, PrimeTuple, u64_key
from sentient_core.store.transfer import export_lines, import_lines
from sentient_core.store.txn import TRACE_VERSION_KEY

DIM = 8


def trace(primes: tuple[int, ...] = (2, 3, 311), **kw) -> TraceRecord:
    return TraceRecord(id=0, row=0, created=1.0e9, last_access=1.0e9, primes=primes, **kw)


def old_encode(rec: TraceRecord) -> bytes:
    """A record as sentient-core wrote it before version 2: primes a msgpack array."""
    return msgspec.msgpack.encode(msgspec.structs.replace(rec, v=1, primes=tuple(rec.primes)))


def rows(n: int, dim: int = DIM) -> np.ndarray:
    r = np.random.default_rng(n).standard_normal((n, dim)).astype(np.float32)
    return r / np.linalg.norm(r, axis=1, keepdims=True)


def random_primes(rng: np.random.Generator, n: int) -> list[tuple[int, ...]]:
    pool = np.array([2, 3, 5, 7, 127, 131, 311, 65521])
    return [tuple(int(p) for p in rng.choice(pool, int(rng.integers(0, 9)))) for _ in range(n)]


def make_old_store(path, primes: list[tuple[int, ...]]) -> Store:
    """A store whose trace records are all version 1 and that was never upgraded."""
    store = Store.open(path, code_dim=DIM)
    recs = [trace(p, text=f"t{i}") for i, p in enumerate(primes)]
    stored = store.write(lambda txn: traces.append(txn, recs, rows(len(recs))))

    def downgrade(txn):
        for rec in stored:
            txn.put("traces", u64_key(rec.id), old_encode(rec))
        txn.delete("meta", TRACE_VERSION_KEY)

    store.write(downgrade)
    return store


def stored_value(store: Store, trace_id: int) -> bytes:
    with store.read() as txn:
        return bytes(txn.get("traces", u64_key(trace_id)))


# -- the record ------------------------------------------------------------------------------


@pytest.mark.parametrize("primes", [(), (2,), (2, 3, 311), (65521, 2, 65521)])
def test_round_trip_stores_little_endian_uint16(primes):
    rec = trace(primes)
    buf = TRACES.encode(rec)
    back = TRACES.decode(buf)
    assert back == rec and back.v == 2
    assert back.primes == primes and isinstance(back.primes, tuple)
    assert type(back.primes) is PrimeTuple and repr(back.primes) == repr(primes)
    packed = struct.pack(f"<{len(primes)}H", *primes)
    assert msgspec.msgpack.encode(packed) in buf  # one msgpack bin, not an array


def test_version_1_record_reads_the_same_and_is_written_as_version_2():
    rec = trace((2, 3, 311, 65521), text="old")
    old = TRACES.decode(old_encode(rec))
    assert old.v == 1 and old.primes == rec.primes
    assert msgspec.structs.replace(old, v=2) == rec
    again = TRACES.decode(TRACES.encode(old))
    assert again.v == 2 and again == rec


@pytest.mark.parametrize(
    ("primes", "fragment"),
    [
        (b"\x02\x00\x03", r"3 bytes is not a whole number of uint16 values"),
        (b"\x02\x00\x00\x00", r"primes must be >= 2, got 0"),
        (b"\x01\x00", r"primes must be >= 2, got 1"),
        ([2, 0], r"primes must be >= 2, got 0"),
        ([2, "3"], r"primes must be integers"),
        ("23", r"primes must be uint16 bytes or an array, got str"),
    ],
)
def test_bad_stored_primes_are_corrupt_records(primes, fragment):
    data = msgspec.to_builtins(trace()) | {"primes": primes}
    with pytest.raises(CorruptRecordError, match=r"trace record at traces/9 .*" + fragment):
        TRACES.decode(msgspec.msgpack.encode(data), where="traces/9")


@pytest.mark.parametrize("primes", [(MAX_PRIME + 2,), (2, 70001), (-3,), (2.5,), (1,), (0,)])
def test_primes_without_a_version_2_form_are_never_written(tmp_path, primes):
    with Store.open(tmp_path / "s", code_dim=DIM) as store:
        with pytest.raises(CorruptRecordError, match="refusing to write invalid trace record"):
            store.write(lambda txn: traces.append(txn, [trace(primes)], rows(1)))
        with store.read() as txn:
            assert txn.counters().trace_count == 0


def test_encoder_banks_stay_within_uint16():
    assert check_bank([2, 3, 65521]).max() == 65521
    with pytest.raises(ArgumentError, match="at most 65535"):
        check_bank([2, 65537])


# -- columns ---------------------------------------------------------------------------------


def naive_columns(recs: list[TraceRecord]) -> tuple[list[int], list[int]]:
    return [len(r.primes) for r in recs], [p for r in recs for p in r.primes]


def test_columns_from_raw_equal_the_per_record_decode(tmp_path):
    rng = np.random.default_rng(5)
    primes = random_primes(rng, 300)
    with Store.open(tmp_path / "s", code_dim=DIM) as store:
        recs = [trace(p, text=f"t{i}", strength=0.05 + i / 300) for i, p in enumerate(primes)]
        store.write(lambda txn: traces.append(txn, recs, rows(len(recs))))
        # Every other record in the old form: a store half upgraded by touches.
        store.write(
            lambda txn: [
                txn.put("traces", u64_key(r.id), old_encode(r))
                for r in traces.iter_range(txn)
                if r.id % 2
            ]
        )
        for chunk in (7, 64, 1000):
            with store.read() as txn:
                decoded = list(traces.iter_range(txn))
                parts = list(iter_chunks(txn, chunk=chunk))
            assert {r.v for r in decoded} == {1, 2}
            counts, flat = naive_columns(decoded)
            assert np.concatenate([c.prime_counts for c in parts]).tolist() == counts
            assert np.concatenate([c.primes for c in parts]).tolist() == flat
            whole = TraceColumns.of_records(decoded)
            for name in ("ids", "rows", "strength", "smf", "prime_counts", "primes"):
                got = np.concatenate([getattr(c, name) for c in parts])
                np.testing.assert_array_equal(got, getattr(whole, name))
            assert all(c.primes.dtype == np.int64 for c in parts)


@pytest.mark.parametrize("old_form", [False, True])
@pytest.mark.parametrize(
    ("bad", "fragment"),
    [(b"\x02\x00\x03", "not a whole number of uint16"), (b"\x05\x00\x00\x00", ">= 2, got 0")],
)
def test_columns_name_the_trace_with_bad_primes(tmp_path, bad, fragment, old_form):
    with Store.open(tmp_path / "s", code_dim=DIM) as store:
        recs = [trace((2, 3), text=f"t{i}") for i in range(5)]
        store.write(lambda txn: traces.append(txn, recs, rows(5)))
        data = msgspec.to_builtins(trace(text="t3")) | {"id": 3, "row": 3, "primes": bad}

        def corrupt(txn):
            if old_form:  # the others version 1: the per-record path
                for r in traces.iter_range(txn):
                    txn.put("traces", u64_key(r.id), old_encode(r))
            txn.put("traces", u64_key(3), msgspec.msgpack.encode(data))

        store.write(corrupt)
        with store.read() as txn, pytest.raises(CorruptRecordError, match=rf"traces/3.*{fragment}"):
            list(iter_chunks(txn))


# -- stores written before version 2 ---------------------------------------------------------


def test_old_store_reads_as_it_is_and_upgrades_once(tmp_path):
    primes = random_primes(np.random.default_rng(1), 50)
    store = make_old_store(tmp_path / "s", primes)
    with store:
        with store.read() as txn:
            assert traces.needs_upgrade(txn)
            assert {r.v for r in traces.iter_range(txn)} == {1}
            cols = list(iter_chunks(txn))
        assert np.concatenate([c.primes for c in cols]).tolist() == [p for ps in primes for p in ps]
        assert HolographicMemory(store).get(7).primes == primes[7]
        assert check_integrity(store).ok
        before = stored_value(store, 7)
        assert store.write(traces.upgrade) == 50
        after = stored_value(store, 7)
        assert after != before and TRACES.decode(after).v == 2
        with store.read() as txn:
            assert not traces.needs_upgrade(txn)
            decoded = list(traces.iter_range(txn))
            assert {r.v for r in decoded} == {2}
            assert [r.primes for r in decoded] == primes
            assert [r.text for r in decoded] == [f"t{i}" for i in range(50)]
        assert store.write(traces.upgrade) == 0
        assert check_integrity(store).ok


def test_new_and_empty_stores_need_no_upgrade(tmp_path):
    with Store.open(tmp_path / "s", code_dim=DIM) as store:
        store.write(lambda txn: traces.append(txn, [trace()], rows(1)))
        with store.read() as txn:
            assert not traces.needs_upgrade(txn)
    old = make_old_store(tmp_path / "empty", [])
    with old, old.read() as txn:
        assert not traces.needs_upgrade(txn)


def test_core_upgrades_an_old_store_on_its_first_writable_open(tmp_path):
    data = tmp_path / "data"
    with Core(data) as core:
        core.memory.store("the old store remembers primes")
        primes = core.memory.get(0).primes
        dim = core.store.code_dim
    assert primes
    with Store.open(data, code_dim=dim) as store:
        raw = stored_value(store, 0)

        def downgrade(txn):
            txn.put("traces", u64_key(0), old_encode(TRACES.decode(raw)))
            txn.delete("meta", TRACE_VERSION_KEY)

        store.write(downgrade)
    with Core(data, readonly=True) as core:  # read-only: read as it is
        assert core.memory.get(0).v == 1 and core.memory.get(0).primes == primes
    with Core(data) as core:
        assert core.memory.get(0).v == 2 and core.memory.get(0).primes == primes
        with core.store.read() as txn:
            assert not traces.needs_upgrade(txn)


def test_export_of_version_1_records_imports_as_version_2(tmp_path):
    primes = [(2, 3), (), (65521,)]
    with make_old_store(tmp_path / "old", primes) as old:
        lines = list(export_lines(old))
    assert b'"v":1' in lines[1] and b'"primes":[2,3]' in lines[1]
    with Store.open(tmp_path / "new", code_dim=DIM) as new:
        assert import_lines(new, lines).traces == 3
        with new.read() as txn:
            got = list(traces.iter_range(txn))
    assert [r.v for r in got] == [2, 2, 2] and [r.primes for r in got] == primes
