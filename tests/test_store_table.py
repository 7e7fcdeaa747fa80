"""Record tables (sentient_core.store.table) and the meta-memory tables built on them.

The on-disk layout must stay what the hand-written store modules wrote before the
tables replaced them: the keys and values below are built the old way (struct,
hashlib, plain msgpack), not through the code under test, so an existing store
reads unchanged and a store written now reads with an older sentient-core.
"""

from __future__ import annotations

import hashlib
import struct

import msgspec
import pytest

from sentient_core.errors import ArgumentError
from sentient_core.metamemory import credit, debts, scorer, sources, surprise, wisdom
from sentient_core.store import CorruptRecordError, RecordCodec, Store, check_integrity, table
from sentient_core.store.errors import StoreUsageError
from sentient_core.store.table import IdTable, NameTable

T0 = 1_700_000_000.0


def u64(n: int) -> bytes:
    return struct.pack(">Q", n)


def digest(*parts: str) -> bytes:
    return hashlib.blake2b("\x00".join(parts).encode("utf-8"), digest_size=16).digest()


def _event(i: int) -> surprise.SurpriseEvent:
    return surprise.SurpriseEvent(
        id=i,
        context=f"question {i}",
        action="recall",
        magnitude=0.5,
        basis=surprise.SurpriseBasis(rule="disagreement.version", inputs={"a": "1"}),
        domain="python" if i % 2 else "debian",
        time=T0,
        source="llm:127.0.0.1/m",
        cause="disagreement",
        source_memory=i,
    )


def _snapshot(v: int) -> scorer.ScorerSnapshot:
    return scorer.ScorerSnapshot(
        model_version=v,
        baseline_version=1,
        factors=("a", "b"),
        baseline=(0.1, 0.2),
        delta=(0.0, 0.01),
        outcome_count=1,
        mean_loss=0.6,
        time=T0,
        lr=0.01,
        half_life_days=21.0,
        grad_clip=1.0,
        batch_digest="0" * 32,
        batch_features=((0.1, 0.2),),
        batch_labels=(True,),
        batch_times=(T0,),
    )


# (table, record, sub-database, key the old module wrote it under, what get() takes)
CASES = [
    (
        credit.CREDITS,
        credit.CreditRecord(trace=7, row=3, credit=-0.4, streak=2, last_dir=-1, updated=T0),
        "scorer",
        b"credit/" + u64(7),
        (7,),
    ),
    (
        credit.FLOORS,
        credit.FloorRecord(trace=9, superseded_by=4, reason="floor", surprise_ids=(1,), time=T0),
        "scorer",
        b"floor/" + u64(9),
        (9,),
    ),
    (
        debts.DEBTS,
        debts.DebtRecord(
            id=3,
            pattern="which version fixed it",
            hypotheses=("2.6", "2.7"),
            test=debts.DiscriminatingTest(kind="question", question="which?"),
            fragility=0.5,
            domain="python",
            evidence=(debts.DebtEvidence(source="web:x.org", confidence=0.4, time=T0),),
            opened=T0,
            updated=T0,
        ),
        "debts",
        b"debt/" + u64(3),
        (3,),
    ),
    (
        sources.WEIGHTS,
        sources.SourceWeight(domain="python", source="web:docs.python.org", weight=0.7, updated=T0),
        "sources",
        b"w/" + digest("python") + digest("web:docs.python.org"),
        ("python", "web:docs.python.org"),
    ),
    (
        sources.WINDOWS,
        sources.DomainWindow(domain="python", failed=("llm:h/m",), updated=T0),
        "sources",
        b"d/" + digest("python"),
        ("python",),
    ),
    (surprise.EVENTS, _event(0), "surprise", u64(0), (0,)),
    (
        wisdom.WISDOM,
        wisdom.WisdomRecord(
            id=2,
            domain="python",
            action="recall",
            history=(
                wisdom.WisdomTransition(
                    source="candidate", target="provisional", reason="x", time=T0
                ),
            ),
            created=T0,
            updated=T0,
        ),
        "wisdom",
        b"wis/" + u64(2),
        (2,),
    ),
    (scorer.SNAPSHOTS, _snapshot(1), "scorer", b"snapshot/" + u64(1), (1,)),
]
IDS = [c[0].codec.name for c in CASES]


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "s", code_dim=8) as s:
        yield s


def _raw(store: Store, db: str) -> dict[bytes, bytes]:
    with store.read() as txn:
        return {bytes(k): bytes(v) for k, v in txn.cursor(db).iternext()}


@pytest.mark.parametrize(("records", "record", "db", "key", "names"), CASES, ids=IDS)
def test_records_written_the_old_way_read_through_the_table(store, records, record, db, key, names):
    store.write(lambda txn: txn.put(db, key, msgspec.msgpack.encode(record)))
    with store.read() as txn:
        assert records.get(txn, *names) == record
        assert list(records.iter(txn)) == [record]
        assert records.count(txn) == 1


@pytest.mark.parametrize(("records", "record", "db", "key", "names"), CASES, ids=IDS)
def test_the_table_writes_the_old_keys_and_bytes(store, records, record, db, key, names):
    store.write(lambda txn: records.put(txn, record))
    assert _raw(store, db) == {key: msgspec.msgpack.encode(record)}
    assert msgspec.msgpack.decode(_raw(store, db)[key], type=type(record)) == record


@pytest.mark.parametrize(("records", "record", "db", "key", "names"), CASES, ids=IDS)
def test_a_corrupt_value_names_the_record(store, records, record, db, key, names):
    store.write(lambda txn: txn.put(db, key, b"\xc1garbage"))
    where = "/".join((records.label, *map(str, names)))
    with store.read() as txn:
        with pytest.raises(CorruptRecordError, match=f"{records.codec.name} at {where} does not"):
            records.get(txn, *names)
        with pytest.raises(CorruptRecordError, match=records.codec.name):
            list(records.iter(txn))
    report = check_integrity(store)
    assert any(records.codec.name in p for p in report.problems)


def test_wisdom_keeps_its_cluster_index_as_before(store):
    rec = CASES[6][1]
    store.write(lambda txn: wisdom.put(txn, rec))
    assert _raw(store, "wisdom")[b"key/" + digest("python", "recall")] == u64(2)
    with store.read() as txn:
        assert wisdom.find(txn, "python", "recall") == rec
        assert wisdom.find(txn, "python", "answer") is None


def test_surprise_events_append_in_sequence_and_read_back_newest_first(store):
    stored = store.write(lambda txn: [surprise.EVENTS.append(txn, _event(99)) for _ in range(5)])
    assert [e.id for e in stored] == [0, 1, 2, 3, 4]
    assert sorted(_raw(store, "surprise")) == [u64(i) for i in range(5)]
    with store.read() as txn:
        assert [e.id for e in surprise.EVENTS.iter(txn, after=2)] == [3, 4]
        assert [e.id for e in surprise.EVENTS.iter(txn, reverse=True)] == [4, 3, 2, 1, 0]
        assert [e.id for e in surprise.EVENTS.iter(txn, after=2, reverse=True)] == [4, 3]
        assert surprise.EVENTS.next_id(txn) == 5 and surprise.EVENTS.count(txn) == 5
        assert surprise.EVENTS.get(txn, -1) is None and surprise.EVENTS.get(txn, 9) is None


def test_id_tables_share_a_sub_database_by_prefix(store):
    def write(txn) -> None:
        for t in (1, 300, 2):
            credit.CREDITS.put(txn, msgspec.structs.replace(CASES[0][1], trace=t))
        credit.FLOORS.put(txn, CASES[1][1])
        scorer.SNAPSHOTS.put(txn, _snapshot(1))
        scorer.SNAPSHOTS.put(txn, _snapshot(2))

    store.write(write)
    with store.read() as txn:
        assert [r.trace for r in credit.CREDITS.iter(txn)] == [1, 2, 300]
        assert credit.CREDITS.next_id(txn) == 301 and credit.CREDITS.count(txn) == 3
        assert [r.trace for r in credit.FLOORS.iter(txn)] == [9]
        assert scorer.SNAPSHOTS.last(txn).model_version == 2
    assert store.write(lambda txn: credit.CREDITS.delete(txn, 2))
    assert not store.write(lambda txn: credit.CREDITS.delete(txn, 2))
    with store.read() as txn:
        assert [r.trace for r in credit.CREDITS.iter(txn)] == [1, 300]


def test_name_tables_iterate_one_leading_name(store):
    def write(txn) -> None:
        for domain in ("python", "debian"):
            for src in ("web:a.org", "llm:h/m"):
                sources.WEIGHTS.put(
                    txn, sources.SourceWeight(domain=domain, source=src, updated=T0)
                )

    store.write(write)
    with store.read() as txn:
        assert {(w.domain, w.source) for w in sources.WEIGHTS.iter(txn, "debian")} == {
            ("debian", "web:a.org"),
            ("debian", "llm:h/m"),
        }
        assert sources.WEIGHTS.count(txn) == 4
        assert sources.WEIGHTS.get(txn, "python", "web:b.org") is None
        with pytest.raises(ArgumentError):
            sources.WEIGHTS.get(txn, "python")


def test_a_record_under_another_key_is_corrupt(store):
    moved = msgspec.msgpack.encode(CASES[2][1])  # debt 3
    store.write(lambda txn: txn.put("debts", b"debt/" + u64(4), moved))
    weight = msgspec.msgpack.encode(CASES[3][1])  # (python, web:docs.python.org)
    store.write(lambda txn: txn.put("sources", b"w/" + digest("python") + digest("x:y"), weight))
    with store.read() as txn:
        with pytest.raises(CorruptRecordError, match=r"debt record at debts/4 .*its id is 3"):
            debts.DEBTS.get(txn, 4)
        with pytest.raises(CorruptRecordError, match="not under its own key"):
            sources.WEIGHTS.get(txn, "python", "x:y")
    assert len(check_integrity(store).problems) == 2


def test_integrity_checks_what_the_owners_registered(store):
    store.write(lambda txn: debts.DEBTS.put(txn, CASES[2][1]))  # names no trace
    bad = msgspec.structs.replace(CASES[6][1], cited_debts=(3, 8))
    store.write(lambda txn: wisdom.put(txn, bad))
    store.write(lambda txn: scorer.SNAPSHOTS.put(txn, _snapshot(2)))
    store.write(lambda txn: surprise.EVENTS.append(txn, _event(0)))
    problems = check_integrity(store).problems
    assert "wisdom 2 cites missing debt(s) [8]" in problems
    assert "scorer: snapshot 1 missing (found 2)" in problems
    assert "surprise event 0 names missing trace 0" in problems
    assert len(problems) == 3


def test_records_no_registered_table_reads_fail_the_check(store, monkeypatch):
    store.write(lambda txn: debts.DEBTS.put(txn, CASES[2][1]))
    assert check_integrity(store).ok
    monkeypatch.setattr(table, "_REGISTERED", {})
    (problem,) = check_integrity(store).problems
    assert problem.startswith("debts: 1 record(s) and no record table registered")


class _Thing(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    v: int = 1
    n: int
    name: str = "x"


def test_tables_check_their_fields_and_registrations_their_prefixes(monkeypatch):
    codec = RecordCodec(_Thing, 1, "thing")
    with pytest.raises(ArgumentError, match="no field"):
        IdTable("debts", b"t/", codec, field="id", label="things")
    with pytest.raises(ArgumentError, match="name field"):
        NameTable("debts", b"t/", codec, fields=("title",), label="things")
    monkeypatch.setattr(table, "_REGISTERED", dict(table._REGISTERED))
    with pytest.raises(StoreUsageError, match="overlaps"):
        table.register(IdTable("debts", b"debt/x", codec, field="n", label="things"))
    with pytest.raises(StoreUsageError, match="overlaps"):
        table.register(IdTable("surprise", b"t/", codec, field="n", label="things"))
    table.register(IdTable("debts", b"thing/", codec, field="n", label="things"))
