"""Store tools: check, backup (taken while a writer writes), export and import.

Restoring a backup or an export gives identical recall, links, question book
and focus goals; a damaged store is reported with exit code 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import lmdb
import pytest

from sentient_core.autonomy.drives import Pursuit
from sentient_core.cli import main
from sentient_core.core import Core
from sentient_core.learning.questions import QuestionBook
from sentient_core.memory import NewTrace
from sentient_core.store import Store, check_integrity, content
from sentient_core.store.records import u64_key
from sentient_core.store.transfer import export_lines, import_lines
from tests.test_learner import CORPUS

ROOT = Path(__file__).resolve().parent.parent
QUERIES = ["ocean tides moon", "honey bees dance", "magma crust volcano", "sun", "nothing at all"]


@pytest.fixture
def filled(tmp_path):
    """A store with traces (one retired), links, a question book and a focus goal."""
    path = tmp_path / "src"
    with Core(path) as core:
        recs = core.memory.store_batch(
            [NewTrace(text=text, kind="learned", source=name) for name, text in CORPUS.items()]
            + [NewTrace(text=f"note {i} about tides and bees", kind="learned") for i in range(40)]
        )
        core.memory.link(recs[0].id, recs[1].id, weight=0.5)
        core.memory.retire([recs[5].id])
        book = QuestionBook(core.store)
        book.register("What causes ocean tides?")
        book.record_outcome(
            "What causes ocean tides?", "success", memory_mark="1", sources_mark="s"
        )
        Pursuit(core.store).add("coupled oscillators")
    return path


def _state(path: Path) -> tuple:
    """What a restore must reproduce: recall results, links, book, goals, counts."""
    with Core(path, readonly=True) as core:
        recalls = [
            [(h.record.id, h.score, h.record.text) for h in core.memory.recall(q, k=5, touch=False)]
            for q in QUERIES
        ]
        links = [(x.src, x.dst, x.weight) for x in core.memory.links(0)]
        book = [(r.question, r.status) for r in QuestionBook(core.store).records()]
        goals = [g.topic for g in Pursuit(core.store).goals()]
        return recalls, links, book, goals, core.memory.count, core.memory.total


def test_check_reports_ok_and_damage_with_exit_codes(filled, tmp_path, capsys):
    assert main(["check", "--data-dir", str(filled)]) == 0
    assert ": ok —" in capsys.readouterr().out
    # Damage: a content digest pointing at a trace that does not hold that text.
    env = lmdb.open(str(filled), max_dbs=64)
    with env.begin(write=True) as txn:
        txn.put(
            content.digest("not stored anywhere"), u64_key(0), db=env.open_db(b"content", txn=txn)
        )
    env.close()
    assert main(["check", "--data-dir", str(filled), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"] and any("does not match trace 0" in p for p in report["problems"])
    assert main(["check", "--data-dir", str(tmp_path / "missing")]) == 2


def test_check_reads_the_meta_memory_records_in_a_fresh_process(filled):
    # A new process has imported no meta-memory module: `check` must still read their records.
    env = lmdb.open(str(filled), max_dbs=64)
    with env.begin(write=True) as txn:
        txn.put(b"debt/" + u64_key(0), b"\xc1garbage", db=env.open_db(b"debts", txn=txn))
    env.close()
    run = subprocess.run(
        [sys.executable, "cli.py", "check", "--json", "--data-dir", str(filled)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    problems = json.loads(run.stdout)["problems"]
    assert any(p.startswith("debt record at debts/0 does not decode") for p in problems)


def test_a_backup_restores_identical_recall(filled, tmp_path, capsys):
    before = _state(filled)
    assert main(["backup", str(tmp_path / "copy"), "--data-dir", str(filled)]) == 0
    assert "integrity ok" in capsys.readouterr().out
    assert _state(tmp_path / "copy") == before
    assert main(["backup", str(tmp_path / "copy"), "--data-dir", str(filled)]) == 2  # not empty


def test_export_then_import_restores_identical_recall(filled, tmp_path, capsys):
    before = _state(filled)
    dump = tmp_path / "dump.jsonl"
    assert main(["export", "--jsonl", "-o", str(dump), "--data-dir", str(filled)]) == 0
    lines = dump.read_bytes().splitlines()
    assert json.loads(lines[0])["kind"] == "header"
    assert main(["import", str(dump), "--data-dir", str(tmp_path / "restored")]) == 0
    assert _state(tmp_path / "restored") == before
    with Store.open(tmp_path / "restored", readonly=True) as store:
        assert check_integrity(store).ok
        with store.read() as txn:  # digests only for the active traces
            assert txn.entries("content") == before[4]
    # Importing into a store that already holds traces is refused.
    assert main(["import", str(dump), "--data-dir", str(tmp_path / "restored")]) == 2
    with (
        Store.open(tmp_path / "empty", code_dim=256) as store,
        pytest.raises(Exception, match="header"),
    ):
        import_lines(store, [b'{"kind": "record", "db": "state", "key": "00", "value": ""}'])


def test_export_lines_are_one_snapshot(filled):
    with Store.open(filled, readonly=True) as store:
        lines = list(export_lines(store))
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds[0] == "header" and kinds.count("header") == 1
    assert kinds.count("trace") == json.loads(lines[0])["traces"] == 43


@pytest.mark.slow
def _wait_for_traces(path, at_least: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with Store.open(path, readonly=True) as store, store.read() as txn:
            if txn.counters().trace_count >= at_least:
                return
        time.sleep(0.01)
    raise AssertionError(f"the writer wrote nothing for {timeout_s} s")


def test_backups_taken_while_a_writer_writes_are_consistent(tmp_path):
    path = tmp_path / "live"
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests._store_writer", "write", str(path), "--pause", "0.002"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout.readline() == "ready\n"
        sizes = []
        for i in range(5):
            if sizes:  # under load the writer may stall: wait until it wrote more
                _wait_for_traces(path, sizes[-1] + 1)
            dest = tmp_path / f"b{i}"
            with Store.open(path, readonly=True) as store:
                store.copy(dest)
            with Store.open(dest, readonly=True) as copy:
                report = check_integrity(copy)
                assert report.ok, report.problems
                sizes.append(report.traces)
        assert sizes == sorted(sizes) and sizes[-1] > sizes[0]
    finally:
        writer.kill()
        writer.communicate()
