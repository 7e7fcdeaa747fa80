"""Memory's unit of work (HolographicMemory.write) over a real LMDB store: memory's
steps and the caller's own writes commit together or not at all, a re-run after the
map grew mirrors nothing twice, and the learner's integrate event names its traces."""

from __future__ import annotations

import numpy as np
import pytest

from sentient_core.core import Core
from sentient_core.events import EventBus, IntegrateEvent, read_events
from sentient_core.integrate import Integrator
from sentient_core.learning.integration import AnswerIntegration
from sentient_core.memory import HolographicMemory, MemoryTxn, NewTrace
from sentient_core.store import Store, StoreUsageError, check_integrity, content, files, traces
from sentient_core.vocab import ChaperoneRequest, Passage, Source
from tests.test_memory import DIM, Clock, mirror_snapshot, random_texts, unit_rows


def _record(source: str, ids: tuple[int, ...]) -> files.FileRecord:
    return files.FileRecord(
        source=source, size=1, mtime_ns=1, digest="0" * 32, trace_ids=ids, ingested_at=1.0
    )


def _items(texts: list[str], seed: int) -> list[NewTrace]:
    codes = unit_rows(len(texts), seed=seed)
    return [NewTrace(text=t, code=c, primes=(2, 3)) for t, c in zip(texts, codes, strict=True)]


def test_the_callers_write_and_memorys_traces_commit_together(tmp_path):
    with Store.open(tmp_path / "s", code_dim=DIM) as st:
        mem = HolographicMemory(st)
        kept = mem.store("a trace that stays")
        texts = random_texts(3, seed=1)

        def body(tx: MemoryTxn) -> tuple[list[int], list[int]]:
            stored = tx.store_unique(_items(texts, seed=2))
            ids = tuple(s.record.id for s in stored)
            files.put(tx.txn, _record("/doc.txt", ids))
            return list(ids), tx.retire([kept.id])

        ids, retired = mem.write(body)
        assert retired == [kept.id] and len(ids) == 3
        assert mem.count == 3 and mem.total == 4 and mem.generation == 1
        with st.read() as txn:
            assert files.get(txn, "/doc.txt").trace_ids == tuple(ids)
            assert [content.lookup(txn, content.digest(t)) for t in texts] == ids
        assert mirror_snapshot(HolographicMemory(st)) == mirror_snapshot(mem)
        assert check_integrity(st).ok


def test_an_exception_in_the_body_leaves_no_trace_no_row_no_digest_no_record(tmp_path):
    with Store.open(tmp_path / "s", code_dim=DIM) as st:
        mem = HolographicMemory(st)
        kept = mem.store("a trace that stays active")
        before = mirror_snapshot(mem)
        texts = random_texts(4, seed=3)

        def body(tx: MemoryTxn) -> None:
            stored = tx.store_batch(_items(texts, seed=4))
            tx.store_unique([NewTrace(text="one more new text", code=unit_rows(1, seed=5)[0])])
            files.put(tx.txn, _record("/doc.txt", tuple(r.id for r in stored)))
            assert tx.retire([kept.id]) == [kept.id]
            raise RuntimeError("the caller fails after memory's steps")

        with pytest.raises(RuntimeError, match="caller fails"):
            mem.write(body)
        assert mirror_snapshot(mem) == before  # no mirror rows, no mask, same generation
        assert mem.count == 1 and not mem.get(kept.id).retired
        with st.read() as txn:
            assert txn.counters().trace_count == 1
            assert files.get(txn, "/doc.txt") is None
            assert all(content.lookup(txn, content.digest(t)) is None for t in texts)
            assert content.lookup(txn, content.digest("one more new text")) is None
        # The same texts store normally afterwards (nothing half-written in the way).
        assert [s.new for s in mem.store_unique(_items(texts, seed=4))] == [True] * 4
        assert check_integrity(st).ok


def test_a_rerun_after_the_map_grew_mirrors_each_row_once(tmp_path):
    with Store.open(tmp_path / "s", code_dim=DIM, map_size=1 << 18) as st:
        # A stepping clock: each run stamps other creation times, so a mirror row
        # taken from an aborted run would differ from the committed record.
        mem = HolographicMemory(st, clock=Clock(step=1.0))
        first = mem.store("stored before the unit of work")
        texts = random_texts(600, seed=6)  # 600 KB of codes: the map must grow, fn re-runs
        runs = 0

        def body(tx: MemoryTxn) -> tuple[int, list[int]]:
            nonlocal runs
            runs += 1
            # The first steps complete in every run; the last one fills the map.
            retired = tx.retire([first.id])
            small = tx.store_unique(_items(["a small first step"], seed=8))
            stored = small + tx.store_unique(_items(texts, seed=7))
            files.put(tx.txn, _record("/big.txt", tuple(s.record.id for s in stored)))
            return len(stored), retired

        n, retired = mem.write(body)
        assert st.map_grows >= 1 and runs == 1 + st.map_grows
        assert (n, retired) == (601, [first.id])
        assert (mem.count, mem.total) == (601, 602)  # not 601 × runs
        assert mirror_snapshot(HolographicMemory(st)) == mirror_snapshot(mem)
        assert len(mem.recall_by_primes([2], k=1000, touch=False)) == 601
        with st.read() as txn:
            assert txn.counters().trace_count == 602
            assert len(files.get(txn, "/big.txt").trace_ids) == 601
        assert check_integrity(st).ok


def test_a_memory_txn_is_only_valid_inside_its_function(tmp_path):
    with Store.open(tmp_path / "s", code_dim=DIM) as st:
        mem = HolographicMemory(st)
        kept: list[MemoryTxn] = []
        mem.write(kept.append)
        with pytest.raises(StoreUsageError, match="ended"):
            kept[0].store_batch([NewTrace(text="too late", code=np.ones(DIM))])
        with pytest.raises(StoreUsageError, match="ended"):
            kept[0].retire([0])
        with pytest.raises(StoreUsageError, match="inside a write"):
            mem.write(lambda tx: mem.store("a nested write"))
        assert mem.total == 0
        with st.read() as txn:
            assert txn.counters().trace_count == 0


def test_a_passages_traces_and_its_integrate_event_name_each_other(tmp_path):
    with Core(tmp_path / "data") as core:
        bus = EventBus(core.store)
        integrator = Integrator(core.memory, core.observer, kind="learned", near=0.95, batch=1)
        answers = AnswerIntegration(integrator, core.observer, bus, None, None)  # type: ignore[arg-type]
        seen: list = []
        bus.subscribe(seen.append)
        source = Source(kind="web", ref="https://example.org/wombats")
        body = " ".join(
            f"Wombat burrow {i} reaches a depth of {i % 7 + 1} metres under dry grassland"
            f" near creek {i * 13}, and its tunnels branch {i % 5 + 2} times."
            for i in range(60)
        )
        passage = Passage(text=body, source=source, heading="Wombat burrows")
        req = ChaperoneRequest(id="q1", type="question", question="How deep are burrows?")
        one = answers.integrate_one(req, passage, True, 0.8, bus.emitter(session="s"))
        ids = one.summary.ids
        assert len(ids) >= 2  # several chunks (batch=1 does not split the passage's commit)
        assert one.summary.commits == 1
        event = one.event
        assert event is not None and event.trace_ids == tuple(ids) and event.chunks == len(ids)
        assert event.known_ids == () and event.source == source.id
        assert event.smf == core.observer.orientation()  # after observing the passage
        assert [r.kind for r in map(core.memory.get, ids)] == ["learned"] * len(ids)
        logged = [e for _, e in read_events(core.store) if isinstance(e, IntegrateEvent)]
        assert logged == [event] and seen == [event]
        # The same passage again: memory holds every chunk, the event names the holders.
        again = answers.integrate_one(
            ChaperoneRequest(id="q2", type="question", question="And again?"),
            passage,
            True,
            0.8,
            bus.emitter(session="s"),
        )
        assert again.summary.ids == [] and again.summary.known == ids
        assert again.event is not None
        assert (again.event.trace_ids, again.event.known_ids) == ((), tuple(ids))
        assert again.event.known == len(ids) and again.event.chunks == 0
        with core.store.read() as txn:
            assert [traces.get(txn, i).use_count for i in ids] == [1] * len(ids)
