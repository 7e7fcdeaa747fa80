"""Commits in the background store exactly what commits in line store.

The Integrator hands each batch's write transaction to one commit thread and
prepares the next batch meanwhile (:mod:`sentient_core.integrate.background`).
Against the same Integrator committing in line (``background=False``): every
sub-database byte-identical, the same observer state, the same summaries — also
when a commit fails part-way through a run (its error stops the run as in line,
with the observer not having seen the batch after it) and when a streamed file
fails after some of its batches were committed.
"""

from __future__ import annotations

import threading

import pytest

import sentient_core.integrate.pipeline as pipeline
from sentient_core.integrate import Integrator
from sentient_core.integrate import ledger as ledger_module
from sentient_core.integrate.background import Committer
from sentient_core.memory import HolographicMemory, MemoryTxn
from sentient_core.observer import Observer
from sentient_core.store import Store, StoreIOError, check_integrity
from tests import test_integrate
from tests.test_integrate import _prose
from tests.test_integrate_batch import NOW, dump, write_corpus

corpus = test_integrate.corpus  # the fixture: good files and bad ones


def run(path, folders, *, background: bool, batch: int, **kw):
    store = Store.open(path, code_dim=256)
    memory = HolographicMemory(store, clock=lambda: NOW)
    observer = Observer(seed=5)
    integ = Integrator(memory, observer, batch=batch, background=background, **kw)
    summaries = [integ.ingest([f]) for f in folders]
    out = (dump(store), observer.to_record(), [_facts(s) for s in summaries])
    assert check_integrity(store).ok
    store.close()
    return out


def _facts(s):
    return (
        s.files,
        s.chunks,
        s.duplicates,
        s.ids,
        s.known,
        s.unchanged,
        s.changed,
        s.superseded,
        s.commits,
        s.stopped_by,
        [(k.path, k.reason) for k in s.skipped],
    )


@pytest.mark.parametrize(
    ("batch", "near", "stream"),
    [(1, None, 1 << 30), (3, None, 2000), (7, 0.95, 1 << 30), (512, None, 2000)],
)
def test_background_commits_store_what_in_line_commits_store(
    tmp_path, monkeypatch, batch, near, stream
):
    monkeypatch.setattr(ledger_module.time, "time", lambda: NOW)
    write_corpus(tmp_path / "in", 4)
    again = tmp_path / "again"
    write_corpus(again, 4)  # the same texts from other files: duplicates by content
    (again / "a.txt").write_text(_prose(8, 7000))  # and a changed file
    folders = [tmp_path / "in", again, tmp_path / "in"]
    kw = dict(batch=batch, near=near, stream_threshold=stream)
    in_line = run(tmp_path / "a", folders, background=False, **kw)
    background = run(tmp_path / "b", folders, background=True, **kw)
    assert background[0] == in_line[0]  # every sub-database, byte for byte
    assert background[1] == in_line[1]  # the observer
    assert background[2] == in_line[2]  # the summaries
    assert in_line[2][0][1] > 10 and in_line[2][2][5] == 5


@pytest.mark.parametrize("failing_commit", [1, 2, 4])
def test_a_failing_commit_stops_the_run_as_in_line(tmp_path, monkeypatch, failing_commit):
    # The n-th store_unique raises on the commit thread: the caller sees the error
    # (stopped_by), what committed before is counted, the batch after it is never
    # observed, and the store holds what an in-line run leaves.
    monkeypatch.setattr(ledger_module.time, "time", lambda: NOW)
    write_corpus(tmp_path / "in", 6)
    real = MemoryTxn.store_unique
    results = []
    for background in (False, True):
        calls = {"n": 0}

        def flaky(self, *a, calls=calls, **kw):
            calls["n"] += 1
            if calls["n"] == failing_commit:
                raise StoreIOError("somewhere", "simulated I/O error")
            return real(self, *a, **kw)

        monkeypatch.setattr(MemoryTxn, "store_unique", flaky)
        results.append(
            run(tmp_path / f"s{background}", [tmp_path / "in"], background=background, batch=4)
        )
    (db_a, obs_a, sum_a), (db_b, obs_b, sum_b) = results
    assert sum_b == sum_a and "simulated I/O error" in sum_a[0][9]
    assert obs_b == obs_a
    assert db_b == db_a


def test_an_unexpected_error_on_the_commit_thread_reaches_the_caller(tmp_path, monkeypatch):
    write_corpus(tmp_path / "in", 7)
    real = MemoryTxn.store_unique
    calls = {"n": 0}

    def broken(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("a bug in a commit")
        return real(self, *a, **kw)

    monkeypatch.setattr(MemoryTxn, "store_unique", broken)
    with Store.open(tmp_path / "s", code_dim=256) as store:
        integ = Integrator(HolographicMemory(store), Observer(seed=1), batch=3)
        before = threading.active_count()
        with pytest.raises(RuntimeError, match="a bug in a commit"):
            integ.ingest([tmp_path / "in"])
        assert threading.active_count() == before  # the commit thread is gone
        monkeypatch.setattr(MemoryTxn, "store_unique", real)
        again = integ.ingest([tmp_path / "in"])  # the next run works, finishing the job
        assert again.chunks + again.duplicates > 0 and not again.stopped_by
        assert check_integrity(store).ok


def test_a_streamed_file_failing_after_background_commits_leaves_nothing(tmp_path, monkeypatch):
    text = _prose(21, 40_000)
    (tmp_path / "flaky.txt").write_text(text)
    (tmp_path / "fine.txt").write_text(_prose(22, 600))  # below the threshold: read whole

    def flaky_iter_text(path, **kw):
        yield text[:30_000]
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(pipeline, "iter_text", flaky_iter_text)
    with Store.open(tmp_path / "s", code_dim=256) as store:
        memory = HolographicMemory(store)
        summary = Integrator(memory, Observer(seed=2), stream_threshold=1000, batch=2).ingest(
            [tmp_path / "fine.txt", tmp_path / "flaky.txt"]
        )
        assert [s.path.split("/")[-1] for s in summary.skipped] == ["flaky.txt"]
        active = memory.recent(1000)
        assert active and all(r.source.endswith("fine.txt") for r in active)
        assert summary.chunks == len(active)


def test_committer_keeps_order_runs_done_on_the_caller_and_raises_there():
    seen: list[tuple[int, str]] = []
    caller = threading.current_thread().name
    with Committer() as c:
        for i in range(5):
            c.submit(lambda i=i: (i, threading.current_thread().name), lambda r, s: seen.append(r))
            assert c.busy
        c.wait()
        assert not c.busy
    assert [i for i, _ in seen] == list(range(5))
    assert all(name != caller for _, name in seen)  # committed on the commit thread
    done_on: list[str] = []
    with Committer() as c:
        c.submit(lambda: 1, lambda r, s: done_on.append(threading.current_thread().name))
    assert done_on == [caller]
    c = Committer()
    c.submit(lambda: 1 / 0, lambda r, s: None)
    with pytest.raises(ZeroDivisionError):
        c.submit(lambda: 2, lambda r, s: None)  # the error of the batch before
    c.close()


def test_committer_closing_on_an_error_keeps_both():
    c = Committer()
    c.submit(lambda: 1 / 0, lambda r, s: None)
    with pytest.raises(KeyError) as info, c:
        raise KeyError("the caller's")
    assert any("ZeroDivisionError" in n for n in info.value.__notes__)
    in_line = Committer(background=False)
    got = []
    in_line.submit(lambda: 7, lambda r, s: got.append((r, threading.current_thread().name)))
    assert got == [(7, threading.current_thread().name)] and in_line.waited == 0
