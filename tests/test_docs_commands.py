"""Every command in a ```sh block of README.md and docs/*.md is run here, or names the test
that runs it, so no documented command can go stale.

A command line is one line of a ``sh`` block (backslash continuations joined, a trailing
``# comment`` stripped). It either

* runs, in document order, from a temporary directory that mirrors the checkout (so what
  it writes lands there), with ``SENTIENT_HOME`` pointing at a copy of a small seeded
  store, and must exit 0, or the code its comment states as ``exit N``; or
* carries ``# run by: tests/FILE.py::TEST`` in its comment: TEST must exist in FILE and
  its source must mention the command's subcommand, verbs and flags.

``python cli.py …`` and ``sentient …`` run in this process through the CLI's ``main`` (the
code behind both entry points), ``python SCRIPT.py …`` through :func:`runpy.run_path`, so
the interpreter and the kernels load once; ``python -m MODULE`` and a line with shell
syntax or an environment assignment run in ``bash``. Each run has a timeout.
"""

from __future__ import annotations

import contextlib
import re
import runpy
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from sentient_core.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TIMEOUT_S = 300  # one command (a cold Numba cache compiles for minutes on 2 cores)
MARKER = re.compile(r"run by: (tests/[\w/]+\.py)::(\w+)")
EXIT = re.compile(r"\bexit (\d+)\b")
SHELL_SYNTAX = re.compile(r"[|&;<>$`]|^\s*[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Command:
    doc: str  # path relative to the checkout
    line: int  # 1-based line of the command in the doc
    text: str  # the command, comment stripped
    comment: str

    @property
    def marker(self) -> tuple[str, str] | None:
        m = MARKER.search(self.comment)
        return (m.group(1), m.group(2)) if m else None

    @property
    def expected(self) -> int:
        m = EXIT.search(self.comment)
        return int(m.group(1)) if m else 0

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def split_comment(line: str) -> tuple[str, str]:
    """``(command, comment)``: the comment starts at the first ``#`` outside quotes that
    begins a word (as in sh)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def commands_in(text: str, doc: str) -> list[Command]:
    """Every command line of the ``sh`` blocks of ``text``."""
    out: list[Command] = []
    lines = text.splitlines()
    in_sh = False
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if not in_sh:
            in_sh = stripped == "```sh"
            continue
        if stripped == "```":
            assert not pending, f"{doc}:{start}: a continuation runs into the block's end"
            in_sh = False
            continue
        if not pending:
            start = number
        if raw.rstrip().endswith("\\"):
            pending.append(raw.rstrip()[:-1].strip())
            continue
        command, comment = split_comment(" ".join([*pending, raw.strip()]))
        pending = []
        if command:
            out.append(Command(doc, start, command, comment))
    assert not in_sh, f"{doc}: an sh block is not closed"
    return out


def doc_commands(path: Path) -> list[Command]:
    return commands_in(path.read_text(), str(path.relative_to(ROOT)))


ALL = [c for path in DOCS for c in doc_commands(path)]


def words(command: str) -> list[str]:
    """The distinctive words of a command line: the program (or script) unless it is the
    CLI itself, and every subcommand, verb, choice and flag name after it."""
    argv = shlex.split(command)
    while argv and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
        argv.pop(0)
    if argv[0] in ("python", "python3") and argv[1] == "cli.py":
        found, rest = [], argv[2:]
    elif argv[:2] in (["python", "-m"], ["python3", "-m"]):
        found, rest = [argv[2].rsplit(".", 1)[-1]], argv[3:]
    elif argv[0] in ("python", "python3"):
        found, rest = [Path(argv[1]).stem], argv[2:]
    elif argv[0] == "sentient":
        found, rest = [], argv[1:]
    else:
        found, rest = [argv[0]], argv[1:]
    for token in rest:
        if token.startswith("-"):
            found.append(token.lstrip("-").split("=")[0])
        elif re.fullmatch(r"[a-z][a-z0-9_-]*", token):
            found.append(token)
    return found


def _function_source(file: Path, name: str) -> str | None:
    """The source of the top-level ``def name`` in ``file`` (its decorators excluded)."""
    lines = file.read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"(async )?def {name}\(", line):
            end = i + 1
            while end < len(lines) and (not lines[end] or lines[end][0] in " \t#)"):
                end += 1
            return "\n".join(lines[i:end])
    return None


def _mentions(source: str, word: str) -> bool:
    norm = source.lower().replace("-", "_")
    return (
        re.search(rf"(?<![a-z0-9]){re.escape(word.lower().replace('-', '_'))}(?![a-z0-9])", norm)
        is not None
    )


# -- the parser itself -----------------------------------------------------------------------


def test_the_parser_joins_continuations_strips_comments_and_reads_markers_and_codes():
    text = "\n".join(
        [
            "intro",
            "```python",
            "print('not sh')",
            "```",
            "```sh",
            "# a comment line",
            "",
            'python cli.py recall "what # is not a comment" -k 3   # the best three',
            "python cli.py evaluate qa.json \\",
            "    --corpus data/c --mode both   # run by: tests/test_x.py::test_y",
            "python cli.py check   # exit 1 when it finds problems",
            "```",
        ]
    )
    found = commands_in(text, "doc.md")
    assert [(c.line, c.text) for c in found] == [
        (8, 'python cli.py recall "what # is not a comment" -k 3'),
        (9, "python cli.py evaluate qa.json --corpus data/c --mode both"),
        (11, "python cli.py check"),
    ]
    assert [c.marker for c in found] == [None, ("tests/test_x.py", "test_y"), None]
    assert [c.expected for c in found] == [0, 0, 1]
    assert words(found[1].text) == ["evaluate", "corpus", "mode", "both"]
    assert words("PYTHONPATH=. python bench/security_table.py --write") == [
        "security_table",
        "write",
    ]
    assert words("make bench SCALE=0.01") == ["make", "bench"]
    assert words("python -m sentient_core.benchmarks.cases_single --x") == ["cases_single", "x"]
    assert _mentions('R.evaluate(qa, mode="both")', "evaluate")
    assert _mentions("run_lying_source(qa)", "lying-source")
    assert not _mentions("reevaluated", "evaluate")


def test_every_link_between_docs_resolves_and_the_readme_links_every_doc():
    readme = (ROOT / "README.md").read_text()
    for path in DOCS:
        text = path.read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not re.match(r"[a-z]+:", target):
                assert (path.parent / target).exists(), f"{path.name} links to {target}"
        if path.parent.name == "docs":
            assert f"(docs/{path.name})" in readme, f"the README does not link {path.name}"


# -- commands that name the test that runs them ----------------------------------------------


MARKED = [c for c in ALL if c.marker]


@pytest.mark.parametrize("command", MARKED, ids=[f"{c.doc}:{c.line}" for c in MARKED])
def test_a_marked_command_names_a_test_that_exists_and_mentions_it(command):
    assert command.marker is not None
    file, name = command.marker
    assert (ROOT / file).is_file(), f"{command}: no {file}"
    source = _function_source(ROOT / file, name)
    assert source is not None, f"{command}: {file} has no test {name}"
    missing = [w for w in words(command.text) if not _mentions(source, w)]
    assert missing == [], f"{command}: {file}::{name} never mentions {missing}"


def _recipe(target: str) -> list[str]:
    makefile = (ROOT / "Makefile").read_text()
    match = re.search(rf"^{re.escape(target)}: .*\n((?:\t.*\n)+)", makefile, re.M)
    assert match, f"the Makefile has no target {target}"
    return [line.strip() for line in match.group(1).splitlines()]


# What each `make` target the docs name must run (a fragment of its recipe, in order).
MAKE_TARGETS = {
    "run": ["cli.py learn --iterations 5 --interval 1"],
    "test": ["ruff check .", "ruff format --check .", "mypy", "python -m pytest -n 2"],
    "test-fast": ["ruff check .", "mypy", 'pytest -m "not slow and not ray" -q -n 2'],
    "test-llm": ["llm-lane-setup.sh", "pytest --llm-lane"],
    "lint": ["ruff check .", "ruff format --check .", "mypy"],
    "format": ["ruff format .", "ruff check --fix ."],
    "bench": ["SENTIENT_BENCH_SCALE=$(SCALE)", "pytest bench --benchmark-enable"],
}


def test_the_make_targets_the_docs_name_do_what_they_say():
    """`make test`, `make test-fast`, `make test-llm`, `make lint`, `make format`,
    `make bench` and `make run` cannot run inside the suite (they run it, or rebuild the
    venv): their recipes must be what the docs say they are."""
    named = {shlex.split(c.text)[1] for c in ALL if c.text.startswith("make ")}
    assert named <= set(MAKE_TARGETS), named - set(MAKE_TARGETS)
    for target, fragments in MAKE_TARGETS.items():
        recipe = "\n".join(_recipe(target))
        at = 0
        for fragment in fragments:
            found = recipe.find(fragment, at)
            assert found >= 0, f"make {target}: {fragment!r} not in its recipe (in order)"
            at = found + len(fragment)
    assert re.search(r"^SCALE \?= ", (ROOT / "Makefile").read_text(), re.M)  # make bench SCALE=


@pytest.mark.slow
def test_make_run_runs_the_learning_loop_it_names(tmp_path, monkeypatch, capsys):
    """`make run` is `cli.py learn --iterations 5 --interval 1` in the venv: run that."""
    (line,) = _recipe("run")
    argv = shlex.split(line)
    assert argv[:2] == ["$(BIN)/python", "cli.py"]
    monkeypatch.setenv("SENTIENT_HOME", str(tmp_path / "home"))
    assert main(argv[2:]) == 0
    out = capsys.readouterr().out
    assert "summary: 5 iteration(s)" in out and "stopped by: done" in out


# -- commands that run here --------------------------------------------------------------------


class _Timeout(BaseException):  # not an Exception: nothing in the CLI may swallow it
    pass


@contextlib.contextmanager
def _deadline(seconds: int):
    def expire(signum, frame):
        raise _Timeout(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> Path:
    """A store holding the pages of tests/data/html (54 chunks), shared read-only."""
    home = tmp_path_factory.mktemp("seeded") / "home"
    code = main(["ingest", str(ROOT / "tests" / "data" / "html"), "--data-dir", str(home)])
    assert code == 0
    return home


def _mirror(where: Path) -> Path:
    """A directory whose entries are links to the checkout's top-level entries."""
    where.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in {".git", ".venv"} and not entry.name.endswith("_cache"):
            (where / entry.name).symlink_to(entry)
    return where


def _run_here(command: Command, capsys, monkeypatch) -> tuple[int, str]:
    argv = shlex.split(command.text)
    with monkeypatch.context() as m, _deadline(TIMEOUT_S):
        try:
            if argv[0] == "sentient" or argv[:2] == ["python", "cli.py"]:
                code = main(argv[1:] if argv[0] == "sentient" else argv[2:])
            else:
                m.setattr(sys, "argv", argv[1:])
                runpy.run_path(argv[1], run_name="__main__")
                code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    out = capsys.readouterr()
    return code, out.out + out.err


def _run_in_bash(command: Command, cwd: Path, home: Path) -> tuple[int, str]:
    import os

    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "SENTIENT_HOME": str(home),
    }
    try:
        done = subprocess.run(
            ["bash", "-c", command.text],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return -1, f"still running after {TIMEOUT_S} s"
    return done.returncode, done.stdout + done.stderr


def test_the_runners_report_the_exit_code_and_the_output(tmp_path, capsys, monkeypatch):
    missing = tmp_path / "nowhere"
    here = Command("doc.md", 1, f"python cli.py status --data-dir {missing}", "exit 2")
    code, output = _run_here(here, capsys, monkeypatch)
    assert (code, here.expected) == (2, 2) and "no sentient-core store" in output
    assert _run_here(Command("doc.md", 2, "python cli.py --help", ""), capsys, monkeypatch)[0] == 0
    bash = Command("doc.md", 3, "echo out; echo err >&2; exit 3", "")
    assert _run_in_bash(bash, tmp_path, tmp_path) == (3, "out\nerr\n")


RUN_DOCS = sorted({c.doc for c in ALL if not c.marker})


@pytest.mark.slow
@pytest.mark.parametrize("doc", RUN_DOCS)
def test_every_command_of_the_doc_runs(doc, seeded, tmp_path, capsys, monkeypatch):
    cwd = _mirror(tmp_path / "checkout")
    home = tmp_path / "home"
    shutil.copytree(seeded, home)
    monkeypatch.setenv("SENTIENT_HOME", str(home))
    monkeypatch.chdir(cwd)
    failed = []
    for command in (c for c in ALL if c.doc == doc and not c.marker):
        assert command.text.split()[0] in ("python", "sentient") or SHELL_SYNTAX.search(
            command.text
        ), f"{command}: not a command this test knows how to run (give it a marker)"
        t0 = time.perf_counter()
        if SHELL_SYNTAX.search(command.text) or command.text.split()[1:2] == ["-m"]:
            code, output = _run_in_bash(command, cwd, home)
        else:
            code, output = _run_here(command, capsys, monkeypatch)
        took = time.perf_counter() - t0
        print(f"{took:6.1f} s  exit {code}  {command}", file=sys.__stderr__)
        if code != command.expected:
            failed.append(
                f"{command}\n  exit {code}, expected {command.expected}\n{output[-3000:]}"
            )
    assert not failed, "\n\n".join(failed)
