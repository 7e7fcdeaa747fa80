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
common         argument types, opening stores, JSON output
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kernels.config import prefer_passive_threads
from sentient_core import __version__
from sentient_core.cli import (
    config_cmds,
    control_cmds,
    evaluate_cmds,
    kernel_cmds,
    learn_cmds,
    memory_cmds,
    meta_cmds,
    server_cmds,
    store_cmds,
)
from sentient_core.cli.common import EXIT_RESOURCES, data_dir_parent

__all__ = ["build_parser", "main"]

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
)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser for every sub-command."""
    p = argparse.ArgumentParser(
        prog="sentient",
        description="sentient-core: autonomous-learning core (Numba kernels over LMDB).",
    )
    p.add_argument("--version", action="version", version=f"sentient-core {__version__}")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="data directory (default: $SENTIENT_HOME or the user data dir)",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    common = data_dir_parent()
    for module in _MODULES:
        module.register(sub, common)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    # A process-wide choice the command makes for itself (importing kernels
    # does not): idle OpenMP threads sleep instead of spinning, so they do not
    # steal the two cores from what runs next (see prefer_passive_threads).
    # Before anything below can start Numba's threads.
    prefer_passive_threads()
    args = build_parser().parse_args(argv)
    from sentient_core.store import StoreError, StoreFullError, StoreIOError

    try:
        return int(args.func(args))
    except (StoreIOError, StoreFullError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_RESOURCES
    except StoreError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
