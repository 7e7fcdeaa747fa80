"""Idempotent ingest (issue 9.5): the same file stores nothing new; a changed file supersedes.

Real files, a real LMDB store; expected chunk sets come from :func:`chunk_text`
applied to each version (the obviously-correct reference).
"""

from __future__ import annotations

import hashlib

import msgspec
import numpy as np
import pytest

from sentient_core.cli import main
from sentient_core.core import Core
from sentient_core.ingest import chunk_text
from sentient_core.integrate import Integrator
from sentient_core.memory import MemoryTxn
from sentient_core.store import StoreIOError, check_integrity, content, files, traces
from sentient_core.store.env import Store
from sentient_core.store.transfer import export_lines, import_lines


def _prose(seed: int, n_chars: int) -> str:
    from sentient_core.corpus import sentences

    rng = np.random.default_rng(seed)
    pool = sentences()
    out: list[str] = []
    while sum(len(s) + 1 for s in out) < n_chars:
        out.append(pool[int(rng.integers(len(pool)))])
    return " ".join(out)


V1 = _prose(1, 4000) + " The zephyrine marker says alpha. " + _prose(2, 4000)
V2 = _prose(1, 4000) + " The quillwort marker says omega. " + _prose(2, 4000)


def _digests(text: str) -> set[bytes]:
    return {content.digest(c.text) for c in chunk_text(text, 2000, 200)}


def _active(core: Core, source: str) -> dict[int, traces.TraceRecord]:
    with core.store.read() as txn:
        return {r.id: r for r in traces.iter_range(txn) if not r.retired and r.source == source}


def _record(core: Core, source: str) -> files.FileRecord | None:
    with core.store.read() as txn:
        return files.get(txn, source)


def _ingest(core: Core, *paths, **kw):
    return Integrator(core.memory, core.observer, **kw).ingest(list(paths))


def test_the_same_file_again_stores_nothing_and_moves_nothing(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(V1)
    with Core(tmp_path / "store") as core:
        first = _ingest(core, doc)
        before = {i: r.use_count for i, r in _active(core, str(doc.resolve())).items()}
        ticks = core.observer.ticks
        again = _ingest(core, doc)
        after = {i: r.use_count for i, r in _active(core, str(doc.resolve())).items()}
        assert (first.files, first.chunks, first.unchanged) == (1, len(_digests(V1)), 0)
        assert (again.files, again.chunks, again.duplicates, again.unchanged) == (0, 0, 0, 1)
        assert after == before  # no use counted, nothing new
        assert core.observer.ticks == ticks  # skipped before the observer saw it
        rec = _record(core, str(doc.resolve()))
        assert rec is not None and set(rec.trace_ids) == set(before)
        assert check_integrity(core.store).ok


def test_a_changed_file_stores_its_new_chunks_and_supersedes_the_old(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(V1)
    old, new = _digests(V1), _digests(V2)
    assert old - new and new - old and old & new  # the edit touches some chunks, not all
    with Core(tmp_path / "store") as core:
        _ingest(core, doc)
        uses = {
            content.digest(r.text): r.use_count for r in _active(core, str(doc.resolve())).values()
        }
        doc.write_text(V2)
        summary = _ingest(core, doc)
        assert summary.changed == 1 and summary.unchanged == 0
        assert summary.chunks == len(new - old)
        assert summary.superseded == len(old - new)
        active = _active(core, str(doc.resolve()))
        assert {content.digest(r.text) for r in active.values()} == new
        # The unchanged chunks were found in their own traces: not a new use.
        for r in active.values():
            key = content.digest(r.text)
            if key in old:
                assert r.use_count == uses[key]
        texts = " ".join(h.record.text for h in core.memory.recall("zephyrine marker", k=10))
        assert "zephyrine" not in texts and "quillwort" in " ".join(r.text for r in active.values())
        rec = _record(core, str(doc.resolve()))
        assert rec is not None and set(rec.trace_ids) == set(active)
        assert check_integrity(core.store).ok
        # And back to the first version: the old text is new again (its trace was retired).
        doc.write_text(V1)
        back = _ingest(core, doc)
        assert back.chunks == len(old - new) and back.superseded == len(new - old)


def test_a_chunk_another_file_still_holds_is_not_retired(tmp_path):
    shared = "Shared paragraph about the heliotrope archive and its catalogues. " * 5
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(shared)
    b.write_text(shared)
    with Core(tmp_path / "store") as core:
        first = _ingest(core, a, b)
        assert first.chunks == 1 and first.duplicates == 1
        (holder,) = _active(core, str(a.resolve()))
        a.write_text("Something else entirely about lighthouse keepers and their logs.")
        summary = _ingest(core, a, b)
        assert summary.changed == 1 and summary.unchanged == 1 and summary.superseded == 0
        assert not core.memory.get(holder).retired  # b's record still names it
        rb = _record(core, str(b.resolve()))
        assert rb is not None and rb.trace_ids == (holder,)


def test_a_retired_trace_brings_an_unchanged_file_back(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(V1)
    with Core(tmp_path / "store") as core:
        _ingest(core, doc)
        victim = min(_active(core, str(doc.resolve())))
        core.memory.retire([victim])
        again = _ingest(core, doc)
        assert again.unchanged == 0 and again.chunks == 1 and again.superseded == 0
        assert {
            content.digest(r.text) for r in _active(core, str(doc.resolve())).values()
        } == _digests(V1)


def test_a_run_stopped_before_the_record_is_finished_by_the_next(tmp_path, monkeypatch):
    doc = tmp_path / "doc.txt"
    doc.write_text(V1)
    with Core(tmp_path / "store") as core:
        _ingest(core, doc)
        doc.write_text(V2)
        real = MemoryTxn.retire

        def failing(self, ids):  # the file's record and its superseded traces are written
            raise StoreIOError(str(tmp_path), "simulated I/O error")  # with its chunks

        monkeypatch.setattr(MemoryTxn, "retire", failing)
        stopped = _ingest(core, doc)
        # One transaction per batch: the new chunk went down with the record.
        assert stopped.stopped_by and stopped.chunks == 0
        assert core.memory.count == len(_digests(V1))
        assert (
            _record(core, str(doc.resolve())).digest
            == hashlib.blake2b(V1.encode(), digest_size=16).hexdigest()
        )
        monkeypatch.setattr(MemoryTxn, "retire", real)
        done = _ingest(core, doc)
        assert done.changed == 1 and done.chunks == len(_digests(V2) - _digests(V1))
        assert done.superseded == len(_digests(V1) - _digests(V2))
        assert {
            content.digest(r.text) for r in _active(core, str(doc.resolve())).values()
        } == _digests(V2)
        assert check_integrity(core.store).ok


@pytest.mark.parametrize("batch", [1, 3, 512])
def test_batches_spanning_files_and_streamed_files_keep_records_exact(tmp_path, batch):
    docs = []
    for i in range(4):
        d = tmp_path / f"d{i}.md"
        d.write_text(_prose(10 + i, 3000 + 1500 * i))
        docs.append(d)
    with Core(tmp_path / "store") as core:
        kw = {"batch": batch, "stream_threshold": 5000}  # the two larger files stream
        _ingest(core, tmp_path, **kw)
        for d in docs:
            rec = _record(core, str(d.resolve()))
            assert rec is not None and set(rec.trace_ids) == set(_active(core, str(d.resolve())))
            assert len(rec.trace_ids) == len(_digests(d.read_text()))
        again = _ingest(core, tmp_path, **kw)
        assert (again.unchanged, again.chunks, again.duplicates) == (4, 0, 0)


def test_file_records_travel_with_an_export(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(V1)
    with Core(tmp_path / "store") as core:
        _ingest(core, doc)
        lines = list(export_lines(core.store))
    with Store.open(tmp_path / "copy", code_dim=core.store.code_dim) as store:
        import_lines(store, lines)
    with Core(tmp_path / "copy") as copy:
        assert _ingest(copy, doc).unchanged == 1


def test_cli_says_unchanged_and_superseded(tmp_path, capsys):
    doc = tmp_path / "doc.txt"
    doc.write_text(V1)
    data = ["--data-dir", str(tmp_path / "store")]
    assert main([*data, "ingest", str(doc)]) == 0
    capsys.readouterr()
    assert main([*data, "ingest", str(doc)]) == 0
    out = capsys.readouterr().out
    assert "0 new chunks" in out and "1 file(s) unchanged" in out and "nothing stored" in out
    doc.write_text(V2)
    assert main([*data, "ingest", str(doc)]) == 0
    out = capsys.readouterr().out
    n = len(_digests(V1) - _digests(V2))
    assert "1 file(s) changed" in out and f"{n} old chunk(s) superseded" in out


def test_integrity_check_reads_file_records(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(V1)
    with Core(tmp_path / "store") as core:
        _ingest(core, doc)
        rec = _record(core, str(doc.resolve()))
        assert rec is not None and check_integrity(core.store).ok
        bad = msgspec.structs.replace(rec, trace_ids=(*rec.trace_ids, 10_000))
        core.store.write(lambda txn: files.put(txn, bad))
        report = check_integrity(core.store)
        assert not report.ok and any("names missing trace(s) [10000]" in p for p in report.problems)
        core.store.write(lambda txn: txn.put(files.DB, b"x" * 16, b"\xc1garbage"))
        assert len(check_integrity(core.store).problems) == 2
