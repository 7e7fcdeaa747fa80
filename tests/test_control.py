"""The control channel: `learner status|pause|resume|stop` against `serve` and `learn`,
a socket only its owner may use, stale sockets, one learner per data directory."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from sentient_core.cli import main
from sentient_core.control import (
    LOCK_NAME,
    SOCKET_NAME,
    ControlReply,
    ControlServer,
    LearnerBusyError,
    NoLearnerError,
    request,
)
from tests.servers.sentient import served, settings_text, write_corpus

ROOT = Path(__file__).resolve().parent.parent


def _echo(op: str) -> ControlReply:
    return ControlReply(ok=True, state="idle", message=f"did {op}")


def test_socket_is_private_and_answers_one_request_per_connection(tmp_path):
    with ControlServer(tmp_path, _echo, mode="test") as server:
        mode = stat.S_IMODE(os.stat(server.path).st_mode)
        assert stat.S_ISSOCK(os.stat(server.path).st_mode) and mode == 0o600
        assert request(tmp_path, "pause").message == "did pause"
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(server.path))
            s.sendall(b'{"op": "explode"}\n')
            reply = json.loads(s.makefile().readline())
        assert reply["ok"] is False and "bad request" in reply["message"]
        with pytest.raises(LearnerBusyError, match="pid"):
            ControlServer(tmp_path, _echo, mode="test")
    assert not (tmp_path / SOCKET_NAME).exists()


def test_long_data_dir_paths_still_bind(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    with ControlServer(deep, _echo, mode="test"):
        assert request(deep, "status").ok


def test_no_learner_and_a_stale_socket(tmp_path, capsys):
    with pytest.raises(NoLearnerError, match="no learner is running") as info:
        request(tmp_path, "status")
    assert not info.value.stale
    # A process killed with SIGKILL leaves its socket file behind: nobody listens on it.
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(tmp_path / SOCKET_NAME))
    stale.close()
    (tmp_path / LOCK_NAME).write_text("pid 1, learn\n")  # the lock file stays; nobody holds it
    assert main(["learner", "status", "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no learner is running" in err and "stale" in err
    assert not (tmp_path / SOCKET_NAME).exists()
    assert main(["learner", "pause", "--data-dir", str(tmp_path / "missing")]) == 1


def test_cli_controls_a_served_learner(tmp_path, capsys):
    with served(tmp_path) as s:
        data = str(s.host.core.data_dir)
        s.client.post("/learning/start")
        s.wait_for(lambda st: st["iteration"] >= 1, what="an iteration")
        assert main(["learner", "status", "--data-dir", data]) == 0
        out = capsys.readouterr().out
        assert f"learner (serve, pid {os.getpid()})" in out and ": running" in out
        assert main(["learner", "pause", "--data-dir", data]) == 0
        assert "pausing" in capsys.readouterr().out
        s.wait_for(lambda st: st["state"] == "paused", what="paused")
        assert main(["learner", "pause", "--data-dir", data]) == 1  # already paused: says so
        assert "already paused" in capsys.readouterr().out
        assert main(["learner", "resume", "--data-dir", data]) == 0
        assert main(["learner", "status", "--json", "--data-dir", data]) == 0
        capsys.readouterr()
        assert main(["learner", "stop", "--data-dir", data]) == 0
        assert s.status()["state"] == "idle"
        capsys.readouterr()
        # A new one-time panel link, printed alone; it logs a browser in once.
        assert main(["learner", "login", "--data-dir", data]) == 0
        link = capsys.readouterr().out.strip()
        assert link.startswith(s.url + "/?token=")
        assert httpx.get(link, follow_redirects=False).status_code == 303
        assert httpx.get(link, follow_redirects=False).status_code == 401


def _wait_line(proc, needle: str, timeout: float = 120.0) -> list[str]:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} never printed; got {''.join(seen)[-2000:]}")


@pytest.mark.slow
def test_cli_controls_a_learner_in_another_terminal(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    corpus = write_corpus(tmp_path / "corpus")
    (data / "sentient.toml").write_text(settings_text(corpus, interval=0.2))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "cli.py", "--data-dir", str(data), "learn", "--iterations", "100"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_line(proc, "iteration done")
        status = request(data, "status")
        assert status.ok and status.status["mode"] == "learn"
        assert status.status["pid"] == proc.pid and status.state == "running"
        assert request(data, "pause").ok
        deadline = time.monotonic() + 60
        while request(data, "status").state != "paused":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        parked = request(data, "status").status["iteration"]
        time.sleep(1.0)  # five intervals
        assert request(data, "status").status["iteration"] == parked
        with pytest.raises(LearnerBusyError):
            ControlServer(data, _echo, mode="test")
        assert request(data, "resume").ok
        login = request(data, "login")  # `learn` serves no panel: it says so
        assert not login.ok and "no panel" in login.message
        assert request(data, "stop").ok
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        assert "stopped by: stop" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with pytest.raises(NoLearnerError):
        request(data, "status")
