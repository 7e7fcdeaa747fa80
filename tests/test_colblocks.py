"""The mirror's columns as raw blocks (issue 25 item 2): a mirror loaded from the blocks is
the mirror decoded from the trace records, through appends, updates, retirements, block
boundaries and wide prime sets; an older store is migrated by its first writable open
and read as before until then; ``check`` compares the blocks with the records."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.memory.mirror import load
from sentient_core.store import Store, check_integrity, colblocks
from sentient_core.store.columns import iter_chunks
from sentient_core.store.errors import CorruptRecordError
from sentient_core.store.records import u64_key

D = 16
FIELDS = ("row_id", "valid", "smf", "created", "last_access", "strength", "importance")


def _fill(memory: HolographicMemory, n: int, seed: int = 0, wide_every: int = 0) -> list[int]:
    rng = np.random.default_rng(seed)
    items = []
    for i in range(n):
        code = rng.standard_normal(D).astype(np.float32)
        smf = rng.standard_normal(16)
        bank = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37]
        wide = bool(wide_every) and i % wide_every == 0  # 11 primes: more than a row holds
        primes = tuple(bank[:11]) if wide else tuple(sorted(rng.choice(bank, 1 + i % 8, False)))
        items.append(
            NewTrace(
                text=f"trace {seed} {i}",
                code=code,
                smf=tuple(smf / np.linalg.norm(smf)),
                primes=primes,
            )
        )
    return [r.id for r in memory.store_batch(items)]


def _decoded(store: Store):
    """The mirror as the record decode builds it (the path before the blocks)."""
    with store.read(buffers=False) as txn:
        n = txn.counters().row_count
        cols = list(iter_chunks(txn))
        blocks = colblocks.load(txn, n)
    return n, cols, blocks


def _same_mirror(store: Store) -> None:
    n, cols, blocks = _decoded(store)
    assert blocks is not None
    ids = np.concatenate([c.ids for c in cols]) if cols else np.zeros(0, np.int64)
    rows = np.concatenate([c.rows for c in cols]) if cols else np.zeros(0, np.int64)
    order = np.argsort(rows)
    assert (blocks.rows == np.arange(n)).all() and (blocks.ids == ids[order]).all()
    for name in ("created", "last_access", "strength", "importance", "retired"):
        want = np.concatenate([getattr(c, name) for c in cols])[order]
        assert (getattr(blocks, name) == want).all(), name
    smf = np.concatenate([c.smf for c in cols])[order]
    assert (blocks.smf == smf).all()
    per_row = {}
    for c in cols:
        at = 0
        for r, k in zip(c.rows.tolist(), c.prime_counts.tolist(), strict=True):
            per_row[r] = c.primes[at : at + k].tolist()
            at += k
    at = 0
    for r, k in enumerate(blocks.prime_counts.tolist()):
        assert blocks.primes[at : at + k].tolist() == per_row[r], r
        at += k


def test_blocks_hold_what_the_records_say_through_every_change(tmp_path):
    with Store.open(tmp_path / "s", code_dim=D) as store:
        memory = HolographicMemory(store)
        ids = _fill(memory, 150, wide_every=37)  # three blocks, the last partial
        _same_mirror(store)
        memory.retire(ids[5:70:7])
        recs = [memory.get(i) for i in ids[60:80]]
        memory.update([msgspec.structs.replace(r, strength=0.3, use_count=4) for r in recs])
        _fill(memory, 3, seed=1)
        _same_mirror(store)
        assert check_integrity(store).ok
        # A reopened memory (blocks) and a decoded mirror agree row for row.
        with store.read() as txn:
            m, _ = load(txn, D)
        again = HolographicMemory(store)
        for field in FIELDS:
            assert (getattr(m, field)[: m.n] == getattr(again.view().mirror, field)[: m.n]).all()


def _unmarked(store: Store) -> None:
    """Make ``store`` look written before the blocks existed."""

    def undo(txn):
        txn.raw.drop(txn.db(colblocks.DB), delete=False)
        txn.delete("meta", colblocks.MARK)

    store.write(undo)


def test_an_older_store_is_read_as_before_and_migrated_by_its_first_writable_open(tmp_path):
    path = tmp_path / "old"
    with Store.open(path, code_dim=D) as store:
        memory = HolographicMemory(store)
        _fill(memory, 100)
        expected = memory.recall("trace 0 7", k=3, touch=False)
        _unmarked(store)
        with store.read() as txn:
            assert not colblocks.enabled(txn) and colblocks.load(txn, 100) is None
    with Store.open(path, code_dim=D, readonly=True) as store:
        # Read-only: nothing is written, the mirror decodes the records.
        hits = HolographicMemory(store).recall("trace 0 7", k=3, touch=False)
        assert [h.record.id for h in hits] == [h.record.id for h in expected]
        with store.read() as txn:
            assert not colblocks.enabled(txn)
    with Store.open(path, code_dim=D) as store:
        HolographicMemory(store)  # the first writable open fills the blocks
        with store.read() as txn:
            assert colblocks.enabled(txn)
        _same_mirror(store)
        assert check_integrity(store).ok


def test_check_finds_a_block_that_disagrees_and_load_refuses_missing_rows(tmp_path):
    with Store.open(tmp_path / "s", code_dim=D) as store:
        memory = HolographicMemory(store)
        _fill(memory, 10)

        def tamper(txn):
            raw = txn.get(colblocks.DB, u64_key(0))
            block = np.frombuffer(bytes(raw), dtype=colblocks.DTYPE).copy()
            block["strength"][3] = 9.0
            txn.put(colblocks.DB, u64_key(0), block.tobytes())

        store.write(tamper)
        report = check_integrity(store)
        assert not report.ok and any("row 3 disagrees" in p for p in report.problems)

        def truncate(txn):
            raw = txn.get(colblocks.DB, u64_key(0))
            txn.put(colblocks.DB, u64_key(0), bytes(raw)[: 5 * colblocks.DTYPE.itemsize])

        store.write(truncate)
        with store.read() as txn, pytest.raises(CorruptRecordError, match="run check_integrity"):
            colblocks.load(txn, 10)


def _same_scorer_columns(store: Store) -> None:
    from sentient_core.store import traces
    from sentient_core.store.columns import ScorerColumns

    with store.read() as txn:
        assert colblocks.enabled(txn)
        got = colblocks.scorer_columns(txn)
        want = ScorerColumns(list(traces.iter_range(txn)))
    for name in ScorerColumns.__slots__:
        if name not in ("source_ids", "source_names"):
            assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert got.sources == want.sources


def test_scorer_columns_from_the_blocks_are_what_the_records_hold(tmp_path):
    # Counts, blank texts and sources (interned ids) through stores, touches, updates of
    # the judged counts, retirements and a reopen.
    with Store.open(tmp_path / "s", code_dim=D) as store:
        memory = HolographicMemory(store)
        items = [
            NewTrace(text="  " if i % 17 == 0 else f"note {i} about tides", source=f"src{i % 5}")
            for i in range(140)
        ]
        ids = [r.id for r in memory.store_batch(items)]
        _same_scorer_columns(store)
        memory.recall("note tides", k=8, touch=True)  # use counts and last access
        recs = [memory.get(i) for i in ids[20:40]]
        memory.update(
            [
                msgspec.structs.replace(r, success_count=3 + i, failure_count=i % 2)
                for i, r in enumerate(recs)
            ]
        )
        memory.retire(ids[::9])
        memory.store_batch([NewTrace(text="a new source", source="other:place")])
        _same_scorer_columns(store)
        assert check_integrity(store).ok
    with Store.open(tmp_path / "s", code_dim=D) as store:
        _same_scorer_columns(store)


def test_blocks_of_the_first_layout_are_refilled_by_the_first_writable_open(tmp_path):
    path = tmp_path / "v1"
    with Store.open(path, code_dim=D) as store:
        memory = HolographicMemory(store)
        _fill(memory, 70)
        store.write(lambda txn: txn.put("meta", colblocks.MARK, b"\x01"))  # layout 1
        with store.read() as txn:
            assert not colblocks.enabled(txn)  # not read as this layout
            cols = colblocks.scorer_columns(txn)  # decoded from the records instead
            assert len(cols) == 70
    with Store.open(path, code_dim=D) as store:
        HolographicMemory(store)
        _same_scorer_columns(store)
        _same_mirror(store)
        assert check_integrity(store).ok


def test_check_finds_a_stale_count_in_a_block(tmp_path):
    with Store.open(tmp_path / "s", code_dim=D) as store:
        memory = HolographicMemory(store)
        _fill(memory, 10)

        def stale(txn):
            raw = txn.get(colblocks.DB, u64_key(0))
            block = np.frombuffer(bytes(raw), dtype=colblocks.DTYPE).copy()
            block["use_count"][3] += 1
            txn.put(colblocks.DB, u64_key(0), block.tobytes())

        store.write(stale)
        report = check_integrity(store)
        assert not report.ok
        assert any("row 3 disagrees" in p for p in report.problems)


def test_the_prime_index_of_a_load_is_the_one_built_from_every_record(tmp_path):
    from sentient_core.memory.mirror import PrimeIndex
    from sentient_core.store import traces

    with Store.open(tmp_path / "s", code_dim=D) as store:
        memory = HolographicMemory(store)
        _fill(memory, 200, wide_every=23)
        memory.retire(list(range(0, 200, 11)))
        with store.read() as txn:
            _, primes = load(txn, D)
            recs = list(traces.iter_range(txn))
        rows = np.repeat([r.row for r in recs], [len(r.primes) for r in recs]).astype(np.int64)
        flat = np.array([p for r in recs for p in r.primes], dtype=np.int64)
        want = PrimeIndex.build(rows, flat)
        assert set(primes.postings) == set(want.postings)
        for p, post in want.postings.items():
            assert primes.postings[p].rows.tolist() == post.rows.tolist(), p
        # Extending a list (a view of one shared array) must not touch its neighbour's.
        first, second = sorted(primes.postings)[:2]
        before = primes.postings[second].rows.tolist()
        primes.postings[first].extend(np.array([10_000], dtype=np.int64))
        assert primes.postings[second].rows.tolist() == before
        assert primes.postings[first].rows[-1] == 10_000


def test_of_counts_falls_back_for_rows_out_of_order():
    from sentient_core.memory.mirror import PrimeIndex

    rows = np.array([5, 2, 9], dtype=np.int64)
    counts = np.array([2, 1, 2], dtype=np.int64)
    flat = np.array([3, 7, 3, 7, 7], dtype=np.int64)
    got = PrimeIndex.of_counts(rows, counts, flat)
    assert got.postings[3].rows.tolist() == [2, 5]
    assert got.postings[7].rows.tolist() == [5, 9]
