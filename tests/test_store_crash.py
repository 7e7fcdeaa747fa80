"""Crash and concurrency tests of the store with real processes.

* A writer process (tests/_store_writer.py) commits batches and reports each
  commit; it is killed with SIGKILL at seeded random moments. After every kill
  the store must open, pass check_integrity, and hold every reported batch,
  whole, and nothing but whole batches.
* A reader process answers top-1 queries in a loop while a writer appends and
  grows the map; neither may fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import numpy as np
import pytest

from sentient_core.store import Store, StoreNotFoundError, check_integrity, codes, links, traces

REPO = Path(__file__).resolve().parents[1]
HELPER = Path(__file__).resolve().parent / "_store_writer.py"
_spec = importlib.util.spec_from_file_location("_store_writer", HELPER)
writer_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(writer_mod)

SEED = 20_240_601
TRIALS = 24
BATCH = 20
DIM = 32
SMALL_MAP = 64 * 1024  # every writer starts small: map growth happens during the trials


def spawn(*args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, str(HELPER), *args, "--batch", str(BATCH), "--dim", str(DIM)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def parse_commits(stdout: str) -> dict[int, int]:
    commits = {}
    for line in stdout.splitlines():
        if line.startswith("committed "):
            _, batch, total = line.split()
            commits[int(batch)] = int(total)
    return commits


def verify(
    path: Path, reported: dict[int, int], recheck: set[int] | None = None, before: int = 0
) -> int:
    """Check the store after a kill; return the number of batches it holds.

    ``before`` is how many batches the store held before this trial: a trial
    adds its reported batches plus at most one committed but not yet reported.

    Structure (check_integrity), counts and presence are always checked in
    full; the content of batches is compared with what the writer wrote for
    the batches in ``recheck`` plus every batch newer than those (all batches
    when ``recheck`` is None).
    """
    try:
        store = Store.open(path, readonly=True)
    except StoreNotFoundError:
        assert not reported, "batches were reported committed but there is no store"
        return 0
    with store:
        report = check_integrity(store)
        assert report.ok, report.problems
        with store.read() as txn:
            counters = txn.counters()
            assert counters.trace_count % BATCH == 0, f"half a batch: {counters}"
            present = counters.trace_count // BATCH
            missing = [b for b in reported if b >= present]
            assert not missing, f"reported committed but absent: {missing}"
            # At most one batch committed after the last report (killed before printing).
            assert present <= max(before, max(reported, default=-1) + 1) + 1
            matrix = codes.read_all(txn)
            assert matrix.shape[0] == present * BATCH
            if recheck is None:
                batches = range(present)
            else:
                batches = sorted(
                    {b for b in recheck if b < present}
                    | set(range(min(recheck, default=0), present))
                )
            for batch in batches:
                records, vecs = writer_mod.batch_content(batch, BATCH, DIM)
                lo = batch * BATCH
                stored = list(traces.iter_range(txn, lo, lo + BATCH))
                assert stored == [
                    msgspec.structs.replace(want, id=lo + i, row=lo + i)
                    for i, want in enumerate(records)
                ]
                np.testing.assert_array_equal(matrix[lo : lo + BATCH], vecs)
                assert links.get(txn, lo, lo + BATCH - 1) is not None
            assert txn.entries("events") == present
            assert txn.entries("links") == present
    return present


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_only_uncommitted_batches(tmp_path):
    rng = random.Random(SEED)
    # The verification sample draws from its own generator: how many batches a trial
    # committed depends on this machine's timing, and must not move the kill schedule.
    pick = random.Random(SEED + 1)
    path = tmp_path / "store"
    reported: dict[int, int] = {}
    mid_run_kills = unreported_commits = surely_mid_run = 0
    present = 0
    for _ in range(TRIALS):
        # Kill moments: sometimes during start-up/open/creation (early); otherwise
        # after 0-4 reported commits plus a random delay, so that the kill lands
        # among commits however fast or slow this machine's fsync is.
        early = rng.random() < 0.2
        waits = 0 if early else rng.randint(0, 4)
        delay = rng.uniform(0.0, 0.5 if early else 0.08)
        seen = ""
        with spawn("write", str(path), "--map-size", str(SMALL_MAP)) as proc:
            if not early:
                seen = proc.stdout.readline()
                assert seen == "ready\n", proc.stderr.read()
            for _ in range(waits):
                line = proc.stdout.readline()
                assert line.startswith("committed "), proc.stderr.read()
                seen += line
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            out, err = proc.communicate(timeout=30)
        out = seen + out
        surely_mid_run += waits > 0
        assert proc.returncode == -signal.SIGKILL, err  # killed, not failed or finished
        commits = parse_commits(out)
        for batch, total in commits.items():
            assert total == (batch + 1) * BATCH
        assert not set(commits) & set(reported), "a batch was committed twice"
        reported.update(commits)
        mid_run_kills += bool(commits)
        # Content: every batch new since the last trial, plus a sample of older ones.
        older = set(pick.sample(range(present), min(present, 10))) | {present}
        present = verify(path, reported, recheck=older, before=present)
        unreported_commits += present - (max(reported, default=-1) + 1)
    assert verify(path, reported, before=present) == present  # finally everything, in full
    print(
        f"\n{TRIALS} SIGKILL trials: {mid_run_kills} killed mid-run, {len(reported)} batches"
        f" reported and all found whole, {unreported_commits} committed-but-unreported batch(es)"
        f" found whole, store {os.path.getsize(path / 'data.mdb')} bytes"
    )
    assert surely_mid_run >= TRIALS // 2  # the seed gives enough kills among commits
    assert mid_run_kills >= surely_mid_run


@pytest.mark.slow
def test_reader_queries_while_writer_appends(tmp_path):
    path = tmp_path / "store"
    Store.open(path, code_dim=DIM).close()
    batches = 150
    target = batches * BATCH
    with spawn(
        "read-loop",
        str(path),
        "--until",
        str(target),
        "--map-size",
        str(SMALL_MAP),
        "--timeout",
        "50",
    ) as reader:
        assert reader.stdout.readline() == "ready\n", reader.stderr.read()
        with spawn(
            "write",
            str(path),
            "--batches",
            str(batches),
            "--pause",
            "0.002",
            "--map-size",
            str(SMALL_MAP),
        ) as writer:
            w_out, w_err = writer.communicate(timeout=55)
        r_out, r_err = reader.communicate(timeout=55)
    assert writer.returncode == 0, w_err
    assert reader.returncode == 0, r_err
    assert len(parse_commits(w_out)) == batches
    grows = int(w_out.split("done grows=")[1])
    summary = json.loads(r_out.strip().splitlines()[-1])
    print(f"\nwriter: {batches} commits, {grows} map growths; reader: {summary}")
    assert summary["final"] == target
    assert 0 < summary["queries"] <= summary["reads"]
    assert summary["distinct_sizes"] >= 3  # it read while the store was growing
    assert summary["map_adopts"] >= 1  # and re-mapped after the writer grew the map
    assert grows >= 1
    with Store.open(path, readonly=True) as store:
        assert check_integrity(store).ok
