"""A trace and its integrate audit event commit in one transaction: SIGKILL trials
of a real learner process never leave a learned trace the audit log does not name."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sentient_core.events import IntegrateEvent, read_events
from sentient_core.store import Store, check_integrity, traces

ROOT = Path(__file__).resolve().parent.parent
TRIALS = 20


def _unexplained(path: Path) -> tuple[int, list[int]]:
    """(learned traces, ids of learned traces no integrate event names)."""
    with Store.open(path, readonly=True) as store:
        assert check_integrity(store).ok
        named = {
            i for _, e in read_events(store) if isinstance(e, IntegrateEvent) for i in e.trace_ids
        }
        with store.read() as txn:
            learned = [r.id for r in traces.iter_range(txn) if r.kind == "learned"]
    return len(learned), [i for i in learned if i not in named]


@pytest.mark.slow
def test_sigkill_never_leaves_a_trace_without_its_integrate_event(tmp_path):
    rng = random.Random(7)
    home = tmp_path / "home"
    env = {**os.environ, "SENTIENT_HOME": str(home), "PYTHONPATH": str(ROOT)}
    killed_after_integrate = 0
    for _ in range(TRIALS):
        proc = subprocess.Popen(
            [sys.executable, "cli.py", "learn", "--iterations", "100", "--interval", "0"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        # Kill at a random moment after the learner integrated something.
        deadline = time.monotonic() + 60
        seen = 0
        wanted = rng.randint(1, 4)
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if "ingest+integrate" in line:
                seen += 1
                if seen >= wanted:
                    break
        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        killed_after_integrate += seen >= wanted
        learned, missing = _unexplained(home)
        assert missing == [], f"{len(missing)} of {learned} learned traces have no event"
    assert killed_after_integrate >= TRIALS // 2
    learned, missing = _unexplained(home)
    assert learned > 0 and missing == []
    print(f"\n{TRIALS} SIGKILL trials: {learned} learned traces, all named by integrate events")
