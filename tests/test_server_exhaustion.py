"""Exhaustion under ``serve``: a full disk, a full map, too many open files, too many streams.

Each is one log line and a 503 naming it (never a traceback), the learner
stops cleanly, ``/health`` says ``degraded`` while it lasts, and ``check`` stays
clean. The disk and descriptor cases are real: the child ``serve`` runs with a
file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored: LMDB's writes past it fail in
the kernel) or has its descriptor limit lowered once it runs (RLIMIT_NOFILE).
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import time

import httpx
import pytest

from sentient_core.core import Core
from sentient_core.store import StoreFullError
from tests.hostile import close_and_check, launch
from tests.servers.sentient import served

HEADROOM = 600 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")  # LMDB's page size is the OS page size


def _file_limit(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _upload(i: int, words_n: int = 1200) -> bytes:
    words = " ".join(
        f"upload{i}word{j} reading{j % 13} gauge{(i * j) % 29}" for j in range(words_n)
    )
    return f"Upload {i}.\n\n{words}.\n".encode()


@pytest.mark.slow
def test_a_full_disk_under_serve_is_a_503_one_line_and_degraded_health(tmp_path):
    data = tmp_path / "data"
    Core(data).close()
    limit = (data / "data.mdb").stat().st_size + HEADROOM
    with launch(tmp_path, preexec_fn=_file_limit(limit)) as t:
        assert t.client.get("/health").json()["status"] == "ok"
        refused = None
        for i in range(60):
            r = t.client.post(f"/ingest?name=u{i}.txt", content=_upload(i))
            if r.status_code == 503:
                refused = r.json()
                break
            assert r.status_code == 200, r.text
        assert refused is not None, "the limit never bit"
        # What was committed before the wall is said too (as `cli.py ingest` says it).
        assert "cannot write the store" in refused.get("detail", refused.get("stopped_by", ""))
        health = t.client.get("/health").json()
        assert health["ok"] is False and health["status"] == "degraded"
        assert any(r.startswith("ingest: cannot write the store") for r in health["reasons"])
        # The learner meets the same wall on its first writes and stops cleanly. Pages
        # earlier commits freed inside the file could still take a small write, so the
        # limit now goes below every data page (LMDB's two meta pages come first): a
        # write of any page past them is refused.
        # (The soft limit only: raising it back needs no privilege.)
        resource.prlimit(t.proc.pid, resource.RLIMIT_FSIZE, (2 * PAGE, limit))
        assert t.client.post("/learning/start").json()["ok"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            st = t.client.get("/learning/status").json()
            if st["state"] == "idle":
                break
            time.sleep(0.1)
        assert st["state"] == "idle"
        assert st["stats"]["stopped_by"] == "store:io", st["stats"]
        assert any(r.startswith("learner: cannot write the store") for r in st["degraded"])
        # Every place that met the wall is a reason (the audit log's writes meet it too
        # once the limit is below every data page), and /metrics counts them.
        reasons = t.client.get("/health").json()["reasons"]
        places = {r.split(":")[0] for r in reasons}
        assert {"ingest", "learner"} <= places <= {"ingest", "learner", "audit log"}, reasons
        assert all("cannot write the store" in r for r in reasons), reasons
        metrics = t.client.get("/metrics").text
        assert f"sentient_degraded {float(len(reasons))}" in metrics
        # Space comes back as it was at the start; the server then stops cleanly.
        resource.prlimit(t.proc.pid, resource.RLIMIT_FSIZE, (limit, limit))
        rows = close_and_check(t)
    assert all(r.ok for r in rows), [r for r in rows if not r.ok]
    log = t.log_text()
    assert log.count("ERROR:") >= 1 and "Traceback" not in log
    # One line per place the wall was met, however often it was met there.
    lines = [line for line in log.splitlines() if "ingest: cannot write the store" in line]
    assert len(lines) == 1, lines


@pytest.mark.slow
def test_too_many_open_files_under_serve_is_one_line_and_passes(tmp_path):
    with launch(tmp_path) as t:
        t.client.get("/health")
        in_use = len(os.listdir(f"/proc/{t.proc.pid}/fd"))
        soft, hard = resource.prlimit(t.proc.pid, resource.RLIMIT_NOFILE)
        resource.prlimit(t.proc.pid, resource.RLIMIT_NOFILE, (in_use + 8, hard))
        held = []
        try:
            for _ in range(24):  # more connections than descriptors left
                s = socket.create_connection(("127.0.0.1", t.port), timeout=5)
                held.append(s)
            time.sleep(1.5)
        finally:
            for s in held:
                s.close()
        resource.prlimit(t.proc.pid, resource.RLIMIT_NOFILE, (soft, hard))
        deadline = time.monotonic() + 30
        health = None
        while time.monotonic() < deadline:
            try:
                health = httpx.get(t.url + "/health", timeout=5).json()
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert health is not None and health["status"] == "degraded", health
        assert health["reasons"] and health["reasons"][0].startswith("accept: too many open files")
        assert t.client.get("/learning/status").status_code == 200  # serving again
        rows = close_and_check(t)
    assert all(r.ok for r in rows), [r for r in rows if not r.ok]
    log = t.log_text()
    assert "Traceback" not in log
    assert log.count("accept: too many open files") == 1


def test_a_full_map_is_a_503_and_clears_when_a_write_succeeds(tmp_path, monkeypatch, caplog):
    with served(tmp_path) as s:
        real = s.host.ingest

        def full(path):
            raise StoreFullError(str(path), "the map reached max_map_size")

        monkeypatch.setattr(s.host, "ingest", full)
        r = s.client.post("/ingest?name=a.txt", content=b"Tides follow the moon.")
        assert r.status_code == 503 and r.headers["retry-after"] == "60"
        assert "max_map_size" in r.json()["detail"]
        health = s.client.get("/health").json()
        assert health["status"] == "degraded" and health["reasons"][0].startswith("ingest:")
        assert s.client.get("/learning/status").json()["degraded"] == health["reasons"]
        monkeypatch.setattr(s.host, "ingest", real)
        assert s.client.post("/ingest?name=a.txt", content=b"Tides follow the moon.").is_success
        assert s.client.get("/health").json() == {
            "ok": True,
            "version": health["version"],
            "status": "ok",
            "reasons": [],
        }
    assert not [r for r in caplog.records if r.exc_info]


def test_stream_clients_are_capped_with_a_503(tmp_path):
    with served(tmp_path, "max_stream_clients = 2\n") as s:
        with (
            s.client.stream("GET", "/learning/stream") as a,
            s.client.stream("GET", "/learning/stream") as b,
        ):
            assert a.status_code == b.status_code == 200
            third = s.client.get("/learning/stream")
            assert third.status_code == 503 and "max_stream_clients" in third.json()["detail"]
        time.sleep(0.2)
        with s.client.stream("GET", "/learning/stream") as again:
            assert again.status_code == 200


def test_an_accept_retry_after_the_socket_closed_is_no_traceback(caplog):
    # CI saw 1,045 tracebacks in one run: asyncio retries an accept() that hit EMFILE
    # one second later, and a retry that fires after serve closed its listening socket
    # raises "Invalid file descriptor: -1".
    import asyncio
    import errno
    import logging

    from sentient_core.server.app import loop_error_handler

    reports = []

    class Board:
        def report(self, what, reason, transient=False):
            reports.append((what, reason))

    def _start_serving():  # named as asyncio's
        pass

    loop = asyncio.new_event_loop()
    try:
        handler = loop_error_handler(Board())
        handle = loop.call_later(10, _start_serving)  # as it is while it runs
        with caplog.at_level(logging.DEBUG):
            handler(
                loop,
                {
                    "message": "Exception in callback",
                    "exception": ValueError("Invalid file descriptor: -1"),
                    "handle": handle,
                },
            )
            handler(loop, {"message": "accept", "exception": OSError(errno.EMFILE, "Too many")})
            handler(loop, {"message": "something else", "exception": RuntimeError("boom")})
        handle.cancel()
    finally:
        loop.close()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    # Only the unrelated error is reported as one; EMFILE goes to the health board.
    assert [r.getMessage() for r in errors] == ["something else"]
    assert reports and reports[0][0] == "accept"
