"""Command-line interface: argument parsing and printing only.

Entry points: ``python cli.py ...`` from a checkout, or the ``sentient``
console command installed with the package. Both call :func:`main`.

One module per domain registers its sub-commands:

kernel_cmds    bench, warmup
memory_cmds    ingest, recall, profile, quality
learn_cmds     learn, eavesdrop, budget, focus
control_cmds   learner status|pause|resume|stop (over the control socket)
config_cmds    config show
server_cmds    serve (the HTTP server and web panel)
evaluate_cmds  evaluate
store_cmds     check, backup, export, import
meta_cmds      feedback, sources, debts, wisdom, scorer, status (learning from error)
layer_cmds     layers, notes (memory's layers, semantic notes)
recipe_cmds    recipes, recipe show (the procedural layer)
common         exit codes, argument types, opening stores, Ctrl-C, the kernels' warm-up

``sentient --help`` lists the commands by task (:data:`GROUPS`), each with an
example (:data:`EXAMPLES`, also the epilog of the command's own ``--help``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sentient_core import __version__
from sentient_core.cli import (
    config_cmds,
    control_cmds,
    evaluate_cmds,
    kernel_cmds,
    layer_cmds,
    learn_cmds,
    memory_cmds,
    meta_cmds,
    recipe_cmds,
    server_cmds,
    store_cmds,
)
from sentient_core.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_PIPE,
    EXIT_RESOURCES,
    EXIT_USAGE,
    data_dir_parent,
)
from sentient_kernels.config import prefer_passive_threads

__all__ = ["EXAMPLES", "GROUPS", "build_parser", "main", "subcommands"]

_MODULES = (
    kernel_cmds,
    memory_cmds,
    store_cmds,
    learn_cmds,
    control_cmds,
    server_cmds,
    config_cmds,
    evaluate_cmds,
    meta_cmds,
    layer_cmds,
    recipe_cmds,
)

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("memory (put text in, get it out)", ("ingest", "recall")),
    ("learning (the chaperone-gated loop)", ("learn", "eavesdrop", "focus", "budget")),
    (
        "learning from error (what meta-memory recorded)",
        ("status", "feedback", "sources", "debts", "wisdom", "scorer"),
    ),
    ("knowledge that climbs (memory's layers)", ("layers", "notes", "recipes", "recipe")),
    ("serving (HTTP API, web panel, remote control)", ("serve", "learner")),
    ("store (integrity, copies, moving data)", ("check", "backup", "export", "import")),
    ("evaluation & performance", ("evaluate", "quality", "profile", "bench", "warmup")),
    ("configuration", ("config",)),
)
"""The commands of ``sentient --help``, by task (every command is in exactly one group)."""

EXAMPLES: dict[str, str] = {
    "ingest": "sentient ingest docs/ notes.pdf",
    "recall": 'sentient recall "how do exceptions propagate" -k 5',
    "learn": 'sentient learn --iterations 5 --ask "How do bees find flowers?"',
    "eavesdrop": "sentient eavesdrop --until-end",
    "focus": 'sentient focus "coupled oscillators"',
    "budget": "sentient budget --json",
    "status": "sentient status",
    "feedback": 'sentient feedback 42 --wrong --note "out of date"',
    "sources": "sentient sources --domain python",
    "debts": "sentient debts --status open",
    "wisdom": "sentient wisdom --json",
    "scorer": "sentient scorer",
    "layers": "sentient layers --json",
    "notes": "sentient notes --all",
    "recipes": "sentient recipes --state confirmed",
    "recipe": "sentient recipe show 3",
    "serve": "sentient serve --port 8765 --open",
    "learner": "sentient learner pause",
    "check": "sentient check --json",
    "backup": "sentient backup ~/sentient-backup",
    "export": "sentient export --jsonl -o dump.jsonl",
    "import": "sentient import dump.jsonl --data-dir ./restored",
    "evaluate": "sentient evaluate qa.json --corpus docs/ --mode both",
    "quality": "sentient quality --queries 200",
    "profile": "sentient profile --size-mb 5",
    "bench": "sentient bench --quick",
    "warmup": "sentient warmup",
    "config": "sentient config show --json",
}
"""One example per command: in the grouped list and in the command's own ``--help``."""

EXIT_CODES = """exit codes:
  0    done (`serve` too, when Ctrl-C or SIGTERM stops it: that is how it ends)
  1    nothing could be ingested; `check` found problems; `learner`: no learner runs there
  2    bad usage, or an error (one line: "error: ..."), e.g. no store at --data-dir
  3    the store could not be written (disk full, file-size limit, I/O error)
  130  interrupted (Ctrl-C: `learn` and `ingest` stop cleanly after the current step)
  141  stdout was closed early (e.g. `sentient status --json | head -1`)"""


class _Formatter(argparse.HelpFormatter):
    """Wraps prose paragraphs to the terminal; keeps a paragraph with indented lines
    (the command list, examples, exit codes) exactly as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = text.split("\n\n")
        return "\n\n".join(
            textwrap.indent(p, indent)
            if any(line.startswith(" ") for line in p.splitlines())
            else super(_Formatter, self)._fill_text(p, width, indent)
            for p in paragraphs
        )


class _Commands:
    """Stands in for argparse's sub-parsers action while modules register commands:
    it keeps each command's one-line help for the grouped list (instead of argparse's
    flat one) and gives every command the formatter and its example."""

    def __init__(self, sub: Any) -> None:
        self.sub = sub
        self.helps: dict[str, str] = {}

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        summary = kwargs.pop("help", "")
        self.helps[name] = summary
        kwargs.setdefault("description", summary[:1].upper() + summary[1:] + ".")
        kwargs.setdefault("formatter_class", _Formatter)
        if name in EXAMPLES:
            kwargs.setdefault("epilog", f"example:\n  {EXAMPLES[name]}")
        parser: argparse.ArgumentParser = self.sub.add_parser(name, **kwargs)
        return parser


def _command_list(helps: dict[str, str], width: int) -> str:
    """The grouped command list of the top-level help (commands in no group go last)."""
    grouped = [name for _, names in GROUPS for name in names]
    groups = [*GROUPS]
    rest = tuple(n for n in helps if n not in grouped)
    if rest:
        groups.append(("other", rest))
    pad = max(len(n) for n in helps) + 4
    lines = ["commands (`sentient COMMAND --help` for a command's options):"]
    for title, names in groups:
        lines += ["", f"{title}:"]
        for name in names:
            if name not in helps:
                continue
            lines += textwrap.wrap(
                helps[name],
                width=width,
                initial_indent=f"  {name:<{pad - 2}}",
                subsequent_indent=" " * pad,
            ) or [f"  {name}"]
            if name in EXAMPLES:
                lines.append(" " * pad + f"e.g. {EXAMPLES[name]}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser for every sub-command."""
    p = argparse.ArgumentParser(
        prog="sentient",
        description="sentient-core: autonomous-learning core (Numba kernels over LMDB).",
        formatter_class=_Formatter,
    )
    p.add_argument("--version", action="version", version=f"sentient-core {__version__}")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="data directory (default: $SENTIENT_HOME or the user data dir)",
    )
    sub = p.add_subparsers(
        dest="command", metavar="COMMAND", help="one of the commands below, by task"
    )
    sub.required = True
    commands = _Commands(sub)
    common = data_dir_parent()
    for module in _MODULES:
        module.register(commands, common)
    width = min(shutil.get_terminal_size().columns - 2, 100)
    p.epilog = _command_list(commands.helps, width) + "\n\n" + EXIT_CODES
    return p


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each command's parser, by name (argparse has no public way to list them)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _one_line(err: BaseException) -> str:
    # KeyError (the base of the not-found errors) would quote its message.
    msg = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
    return " ".join(str(msg).split()) or type(err).__name__


def _run(args: argparse.Namespace) -> int:
    """Run the command; every error raised on purpose becomes one line and an exit code."""
    from sentient_core.errors import ResourceError, SentientError, exhaustion

    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SentientError as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return EXIT_RESOURCES if isinstance(err, ResourceError) else EXIT_USAGE
    except BrokenPipeError:
        raise  # stdout closed: main() ends quietly
    except OSError as err:
        # What the OS refused (a missing input file, a directory without permission):
        # the user's to fix, so one line, not a traceback.
        reason = exhaustion(err)
        where = f": {err.filename}" if err.filename is not None else ""
        print(f"error: {reason or (err.strerror or str(err)) + where}", file=sys.stderr)
        return EXIT_RESOURCES if reason else EXIT_USAGE


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code.

    Errors sentient-core raises on purpose (:class:`~sentient_core.errors.SentientError`)
    and OS refusals print one ``error: ...`` line and exit 2 (3 when a resource ran out);
    Ctrl-C exits 130; a closed stdout (``... | head``) exits 141 without a word (the
    recipe of Python's signal docs: SIGPIPE stays ignored, so cleanup still runs).
    """
    # A process-wide choice the command makes for itself (importing kernels does
    # not): idle OpenMP threads sleep instead of spinning, so they do not steal the
    # two cores from what runs next (see prefer_passive_threads). Before anything
    # below can start Numba's threads.
    prefer_passive_threads()
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:
            sys.stdout.flush()  # after --help or --version: a closed pipe shows here
            raise
        code = _run(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_PIPE
