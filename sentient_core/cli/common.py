"""Helpers every command module shares: argument types, opening stores, JSON output."""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec

__all__ = [
    "EXIT_RESOURCES",
    "JSON",
    "data_dir_parent",
    "open_core",
    "open_store",
    "positive_float",
    "positive_int",
]

JSON = msgspec.json.Encoder()

EXIT_RESOURCES = 3
"""Exit code when the store could not be written (disk full, file-size limit, I/O
error, map at its maximum): what was committed before stays, the summary says what."""


def open_core(args: argparse.Namespace, *, readonly: bool = False):
    """The :class:`~sentient_core.core.Core` on ``--data-dir`` (imported when needed)."""
    from sentient_core.core import Core

    return Core(args.data_dir, readonly=readonly)


def open_store(args: argparse.Namespace, *, readonly: bool):
    """The store alone (commands that need no memory mirror or observer)."""
    from sentient_core.core import CODE_DIM
    from sentient_core.store import Store, default_data_dir

    path = args.data_dir if args.data_dir is not None else default_data_dir()
    return Store.open(path, code_dim=CODE_DIM, readonly=readonly, create=not readonly)


def positive_float(text: str) -> float:
    """argparse type: a number in (0, 1]."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (0 < v <= 1):
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {v}")
    return v


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def data_dir_parent() -> argparse.ArgumentParser:
    """A parent parser adding ``--data-dir`` to a sub-command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir",
        type=Path,
        default=argparse.SUPPRESS,
        help="data directory (default: $SENTIENT_HOME or the user data dir)",
    )
    return common
