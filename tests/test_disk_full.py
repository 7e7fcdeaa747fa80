"""A store that cannot be written is explained, not a traceback: ingest and learn
print one line (what the OS said, free space), what was committed, the summary,
and exit with code 3; the store stays consistent.

The failure is real: the child process runs with a file-size limit (RLIMIT_FSIZE,
SIGXFSZ ignored), so LMDB's writes beyond it fail in the kernel with EFBIG.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sentient_core.core import Core
from sentient_core.store import Store, check_integrity, traces

ROOT = Path(__file__).resolve().parent.parent
HEADROOM = 600 * 1024  # bytes the store may grow before the limit bites


def _limited(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _run(args: list[str], data: Path, limit: int, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SENTIENT_HOME": str(data)}
    return subprocess.run(
        [sys.executable, "cli.py", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limited(limit),
    )


def _corpus(folder: Path, files: int = 40) -> Path:
    folder.mkdir()
    for i in range(files):
        words = " ".join(
            f"topic{i}word{j} measurement{j % 17} sample{(i * j) % 23}" for j in range(400)
        )
        (folder / f"doc{i}.txt").write_text(f"Document {i}.\n\n{words}.\n")
    return folder


def _committed(data: Path) -> int:
    with Store.open(data, readonly=True) as store:
        assert check_integrity(store).ok
        with store.read() as txn:
            return traces.count(txn)


@pytest.mark.slow
def test_ingest_on_a_full_disk_explains_and_keeps_what_it_committed(tmp_path):
    data = tmp_path / "data"
    Core(data).close()
    limit = (data / "data.mdb").stat().st_size + HEADROOM
    out = _run(["ingest", str(_corpus(tmp_path / "corpus")), "--batch", "16"], data, limit)
    assert out.returncode == 3, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    # LMDB reports the kernel's EFBIG from its commit as an I/O error.
    assert len(errors) == 1 and "MB free" in errors[0]
    assert "Input/output error" in errors[0] or "File too large" in errors[0]
    assert "Traceback" not in out.stderr
    assert "ingested" in out.stdout and "new chunks" in out.stdout
    stored = _committed(data)
    assert 0 < stored < 40 * 8  # some batches committed, then it stopped
    assert f"the {stored} chunk(s) above were committed" in errors[0]


@pytest.mark.slow
def test_learn_on_a_full_disk_stops_cleanly_with_an_event(tmp_path):
    data = tmp_path / "data"
    Core(data).close()
    limit = (data / "data.mdb").stat().st_size + HEADROOM
    corpus = _corpus(tmp_path / "corpus")
    out = _run(
        ["learn", "--iterations", "100", "--interval", "0", "--corpus", str(corpus)], data, limit
    )
    assert out.returncode == 3, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert "ERROR in store" in out.stdout  # the live view shows the event
    assert "stopped by: store:io" in out.stdout and "summary:" in out.stdout
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "Input/output error" in errors[0] or "File too large" in errors[0]
    assert _committed(data) >= 0
