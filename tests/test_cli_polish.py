"""The command line as a new user meets it: grouped help with examples, one-line errors
with exit 2, Ctrl-C (exit 130 after a clean stop), a closed pipe, --json everywhere a
result is printed, read commands that never create a store, kernel-compile progress
that stays clean in a pipe, and a test run that needs no root."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from sentient_core.cli import EXAMPLES, GROUPS, build_parser, main, subcommands
from sentient_core.core import CODE_DIM
from sentient_core.store import Store

ROOT = Path(__file__).resolve().parent.parent
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # any control character but \t and \n


def _cli(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "cli.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=kw.pop("timeout", 300),
        **kw,
    )


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def _store(path: Path) -> Path:
    """An empty store at ``path``."""
    Store.open(path, code_dim=CODE_DIM).close()
    return path


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# -- 1. help ------------------------------------------------------------------------------


def test_help_groups_every_command_by_task_each_with_an_example():
    out = _cli("--help", check=True).stdout
    commands = set(subcommands(build_parser()))
    assert len(commands) == 28
    grouped = [name for _, names in GROUPS for name in names]
    assert sorted(grouped) == sorted(commands)  # each in exactly one group, none left over
    positions = [out.index(f"\n{title}:\n") for title, _ in GROUPS]
    assert positions == sorted(positions)
    for (title, names), start in zip(GROUPS, positions, strict=True):
        end = out.find("\n\n", start + 1)
        block = out[start:end]
        for name in names:
            assert re.search(rf"^  {name} ", block, re.M), (name, title)
            assert f"e.g. {EXAMPLES[name]}" in block
    assert "exit codes:" in out and "130" in out and "141" in out


def test_each_command_help_ends_with_its_example():
    for name, parser in subcommands(build_parser()).items():
        assert parser.format_help().rstrip().endswith(f"example:\n  {EXAMPLES[name]}"), name


# -- 2. one-line errors, exit 2 ----------------------------------------------------------------


def test_a_bad_environment_value_is_one_line_and_exit_2(tmp_path):
    data = _store(tmp_path / "data")
    out = _cli(
        "budget",
        "--data-dir",
        str(data),
        env=_env(SENTIENT_AUTONOMOUS_DAILY_TOKENS="abc"),
    )
    assert out.returncode == 2
    assert "SENTIENT_AUTONOMOUS_DAILY_TOKENS='abc'" in _one_error_line(out.stderr)


@pytest.mark.parametrize(
    "args",
    [["recall", ""], ["recall", "   "], ["focus", ""], ["learn", "--ask", ""]],
    ids=["recall-empty", "recall-blank", "focus-empty", "ask-empty"],
)
def test_empty_text_is_bad_usage(tmp_path, args):
    out = _cli(*args, "--data-dir", str(tmp_path / "d"))
    assert out.returncode == 2 and "must not be empty" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "d").exists()


def test_a_missing_input_file_is_one_line_and_makes_no_store(tmp_path):
    out = _cli("import", str(tmp_path / "nothere.jsonl"), "--data-dir", str(tmp_path / "new"))
    assert out.returncode == 2
    assert "nothere.jsonl" in _one_error_line(out.stderr)
    assert not (tmp_path / "new").exists()


def test_any_sentient_error_is_one_line_exit_2(capsys, monkeypatch):
    from sentient_core.cli import memory_cmds
    from sentient_core.errors import ArgumentError, NotFoundError, ResourceError

    for err, code in (
        (ArgumentError("bad\nvalue"), 2),
        (NotFoundError("no goal g1"), 2),
        (ResourceError("no space left on device"), 3),
    ):

        def boom(args, err=err):
            raise err

        monkeypatch.setattr(memory_cmds, "_cmd_quality", boom)
        assert main(["quality"]) == code
        line = _one_error_line(capsys.readouterr().err)
        assert "'" not in line and "\n" not in line  # a KeyError's quotes are not shown


# -- 6. read commands never create a store ------------------------------------------------------

READ_COMMANDS = [
    ["recall", "tides"],
    ["recall", "tides", "--no-touch"],
    ["recall", "tides", "--explain"],
    ["feedback", "1", "--wrong"],
    ["status"],
    ["check"],
    ["scorer"],
    ["sources"],
    ["debts"],
    ["wisdom"],
    ["budget"],
    ["focus"],
    ["export", "--jsonl"],
    ["backup", "BACKUP"],
    ["eavesdrop", "--once"],
]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=[" ".join(a) for a in READ_COMMANDS])
def test_read_commands_say_there_is_no_store_and_create_none(tmp_path, capsys, args):
    args = [str(tmp_path / "b") if a == "BACKUP" else a for a in args]
    missing = tmp_path / "typo"
    assert main([*args, "--data-dir", str(missing)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"no sentient-core store at {missing}" in line
    assert not missing.exists()
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"\xff\xd8")
    assert main([*args, "--data-dir", str(other)]) == 2
    assert "is not a sentient-core store" in _one_error_line(capsys.readouterr().err)
    assert sorted(p.name for p in other.iterdir()) == ["cat.jpg"]


def test_recall_on_a_typo_in_a_subprocess_exits_2_and_leaves_nothing(tmp_path):
    out = _cli("recall", "anything", "--data-dir", str(tmp_path / "typo"))
    assert out.returncode == 2 and out.stdout == ""
    assert "no sentient-core store" in _one_error_line(out.stderr)
    assert not (tmp_path / "typo").exists()


def test_writing_commands_still_create_their_store(tmp_path, capsys):
    (tmp_path / "doc.txt").write_text("Tides follow the moon. " * 50)
    assert main(["ingest", str(tmp_path / "doc.txt"), "--data-dir", str(tmp_path / "a")]) == 0
    assert (tmp_path / "a" / "data.mdb").is_file()
    assert main(["focus", "coupled oscillators", "--data-dir", str(tmp_path / "f")]) == 0
    assert (tmp_path / "f" / "data.mdb").is_file()


# -- 5. --json ------------------------------------------------------------------------------------


def test_backup_and_import_print_json(tmp_path, capsys):
    (tmp_path / "doc.txt").write_text("Bees dance to point at flowers. " * 60)
    data = str(tmp_path / "data")
    assert main(["ingest", str(tmp_path / "doc.txt"), "--data-dir", data]) == 0
    capsys.readouterr()
    assert main(["backup", str(tmp_path / "copy"), "--json", "--data-dir", data]) == 0
    backup = json.loads(capsys.readouterr().out)
    assert backup["ok"] is True and backup["traces"] >= 1 and backup["bytes"] > 0
    assert backup["dest"] == str(tmp_path / "copy")
    dump = tmp_path / "dump.jsonl"
    assert main(["export", "-o", str(dump), "--data-dir", data]) == 0
    capsys.readouterr()
    assert main(["import", str(dump), "--json", "--data-dir", str(tmp_path / "back")]) == 0
    imported = json.loads(capsys.readouterr().out)
    assert imported["traces"] == backup["traces"] and imported["path"] == str(tmp_path / "back")


def test_every_command_that_prints_a_result_takes_json():
    parsers = subcommands(build_parser())
    # export writes JSON lines already (its counts go to stderr); config has a verb.
    lacking = [
        name
        for name, parser in parsers.items()
        if name not in {"export", "config"} and "--json" not in parser.format_help()
    ]
    assert lacking == []
    assert "--json" in subcommands(parsers["config"])["show"].format_help()


@pytest.mark.slow
def test_serve_json_prints_one_startup_object_and_one_stop_object(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "cli.py", "serve", "--port", "0", "--json"],
        cwd=ROOT,
        env=_env(SENTIENT_HOME=str(tmp_path / "data")),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        started = json.loads(proc.stdout.readline())
        assert started["event"] == "serving" and started["url"].startswith("http://127.0.0.1:")
        assert started["login_url"].startswith(started["url"])
        assert started["data_dir"] == str(tmp_path / "data")
        deadline = time.monotonic() + 60
        while True:  # the line comes just before uvicorn takes over SIGINT: wait for it
            try:
                if httpx.get(started["url"] + "health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert json.loads(out) == {"event": "stopped", "signal": "SIGINT"}, err
    assert proc.returncode == 0 and "Traceback" not in err


# -- 4. a closed pipe ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "code"),
    # argparse itself swallows a failed write of --help (and exits 0): quiet is what matters.
    [(["status", "--json"], 141), (["scorer"], 141), (["--help"], 0)],
    ids=["status", "scorer", "help"],
)
def test_a_closed_stdout_ends_quietly_with_141(tmp_path, command, code):
    data = _store(tmp_path / "data")
    proc = subprocess.Popen(
        [sys.executable, "cli.py", "--data-dir", str(data), *command],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first byte is written (`| head`)
    with proc.stderr:
        err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert err == ""
    assert proc.returncode == code


# -- 3. Ctrl-C ----------------------------------------------------------------------------------------


def _spawn(data: Path, *args: str) -> subprocess.Popen[str]:
    """``cli.py --data-dir DATA ARGS`` in a child process, stdout and stderr piped."""
    return subprocess.Popen(
        [sys.executable, "cli.py", "--data-dir", str(data), *args],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read_until(stream, needle: str, timeout: float = 300.0) -> str:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"{needle!r} never printed; got {''.join(seen)[-2000:]}")


@pytest.mark.slow
def test_ctrl_c_stops_learn_after_the_step_prints_the_summary_and_exits_130(tmp_path):
    data = tmp_path / "data"
    # An hour between iterations: a learner that sat out the wait would not end
    # within communicate's timeout, and the test would fail there.
    proc = _spawn(data, "learn", "--iterations", "20", "--interval", "3600")
    try:
        assert proc.stdout is not None
        _read_until(proc.stdout, "iteration done")
        proc.send_signal(signal.SIGINT)  # in the wait: it must not sit it out
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupt: stopping after the current step" in err and "Traceback" not in err
    assert "summary: 1 iteration(s)" in out and "stopped by: interrupted" in out
    with Store.open(data, readonly=True) as store:  # closed cleanly, and it opens
        from sentient_core.store import check_integrity

        assert check_integrity(store).ok
    assert _cli("learner", "status", "--data-dir", str(data)).returncode == 1  # socket gone


@pytest.mark.slow
def test_ctrl_c_stops_ingest_after_the_file_and_commits_what_was_read(tmp_path):
    from sentient_core.corpus import generate_corpus

    files = generate_corpus(tmp_path / "corpus", 8_000_000, file_bytes=200_000, seed=3)
    data = tmp_path / "data"
    proc = _spawn(data, "ingest", str(tmp_path / "corpus"))
    try:
        assert proc.stderr is not None
        _read_until(proc.stderr, "files,")  # the first file is in
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    m = re.search(r"interrupted: stopped after (\d+) file\(s\); their (\d+) chunk\(s\)", err)
    assert m, err
    done, chunks = int(m.group(1)), int(m.group(2))
    assert 1 <= done < len(files) and chunks > 0
    assert f"ingested {done} file(s), {chunks} new chunks" in out
    with Store.open(data, readonly=True) as store, store.read() as txn:
        assert txn.counters().trace_count == chunks  # the last batch was committed too


# -- 7. kernel-compile progress ----------------------------------------------------------------------


def test_warmup_reports_progress_module_by_module():
    from sentient_kernels.warmup import MODULES, warmup

    calls: list[tuple[int, int, str]] = []
    warmup(MODULES[:3], progress=lambda *a: calls.append(a))
    assert calls == [(0, 3, MODULES[0]), (1, 3, MODULES[1]), (2, 3, MODULES[2]), (3, 3, "")]


def test_warmup_progress_in_a_pipe_is_plain_lines():
    out = _cli("warmup", check=True)
    from sentient_kernels.warmup import MODULES

    assert f"compiling kernels 0/{len(MODULES)}: sedenion" in out.stderr
    assert "kernels ready" in out.stderr
    assert not CONTROL.search(out.stderr + out.stdout), repr(out.stderr)
    assert out.stdout.splitlines()[0].split()[:2] == ["module", "seconds"]


def test_warmup_progress_on_a_terminal_redraws_one_line():
    parent, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "cli.py", "warmup"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=child,
    )
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(parent, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(parent)
    assert proc.wait(timeout=300) == 0
    shown = b"".join(chunks).decode()
    assert shown.count("\r\x1b[2K") >= 2 and "compiling kernels" in shown


def test_ingest_times_itself_after_the_kernels_are_compiled(tmp_path, capsys, monkeypatch):
    import sentient_kernels.warmup

    real = sentient_kernels.warmup.warmup

    def slow_cold_compile(*args, **kwargs):
        time.sleep(1.5)  # what a cold cache costs, in miniature
        done = real(*args, **kwargs)
        return [
            sentient_kernels.warmup.ModuleWarmup(
                w.module, w.seconds + 1.5 / len(done), w.kernels, 0, w.kernels
            )
            for w in done
        ]

    monkeypatch.setattr(sentient_kernels.warmup, "warmup", slow_cold_compile)
    doc, data = str(tmp_path / "doc.txt"), str(tmp_path / "data")
    (tmp_path / "doc.txt").write_text("Tides follow the moon. " * 500)
    assert main(["ingest", doc, "--json", "--data-dir", data]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["kernels_seconds"] >= 1.5
    assert summary["seconds"] < 1.5 and summary["chunks_per_s"] > 0
    assert main(["ingest", doc, "--data-dir", data]) == 0
    err = capsys.readouterr().err
    assert "kernels ready in" in err and "compiled" in err  # said once, apart from ingest's rate


# -- 8. tests without root ------------------------------------------------------------------------------


def test_make_test_needs_no_root_and_ci_installs_chromium_first():
    makefile = (ROOT / "Makefile").read_text()
    (prereqs,) = re.findall(r"^test: *(.*)$", makefile, re.M)
    assert prereqs.split() == ["$(STAMP)"]
    recipes = [line for line in makefile.splitlines() if line.startswith("\t")]
    assert not [line for line in recipes if "apt-get" in line or "sudo" in line]
    ci = (ROOT / ".ci" / "run").read_text()
    install = ci.index("apt-get install -y -qq chromium chromium-driver")
    assert install < ci.index("\nmake test\n") and "export CI=" in ci


def test_browser_test_skips_with_the_reason_and_fails_on_ci():
    from tests.servers.browser import require_chromium

    absent = ("/nonexistent/chromium", "/nonexistent/chromedriver")
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        require_chromium(absent, env={})
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require_chromium(absent, env={"CI": "true"})
    require_chromium((sys.executable, sys.executable), env={"CI": "true"})  # present: runs
