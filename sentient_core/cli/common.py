"""Helpers every command module shares: exit codes, argument types, opening stores,
Ctrl-C handling and the kernels' warm-up with progress."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from sentient_kernels.warmup import ModuleWarmup

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_PIPE",
    "EXIT_RESOURCES",
    "EXIT_USAGE",
    "JSON",
    "Interrupt",
    "data_dir_parent",
    "interruptible",
    "open_core",
    "open_store",
    "positive_float",
    "positive_int",
    "text",
    "warm_kernels",
]

JSON = msgspec.json.Encoder()

EXIT_USAGE = 2
"""Exit code for bad usage and for any error sentient-core raised on purpose
(:class:`~sentient_core.errors.SentientError`): one ``error: …`` line on stderr."""

EXIT_RESOURCES = 3
"""Exit code when the store could not be written (disk full, file-size limit, I/O
error, map at its maximum): what was committed before stays, the summary says what."""

EXIT_INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT, what a shell reports for a process it killed)."""

EXIT_PIPE = 141
"""Exit code when stdout was closed early (``… | head``): 128 + SIGPIPE, what a shell
reports for ``yes | head``, so ``set -o pipefail`` still sees the output was cut short."""


def _store_path(args: argparse.Namespace) -> Path:
    from sentient_core.store import default_data_dir

    return Path(args.data_dir) if args.data_dir is not None else default_data_dir()


@contextlib.contextmanager
def _no_store_here(path: Path) -> Iterator[None]:
    """Say what to do when a command that only uses a store finds none at ``path``."""
    from sentient_core.store import StoreNotFoundError

    try:
        yield
    except StoreNotFoundError:
        # The store's own message speaks of `readonly`/`create=False`: API words.
        raise StoreNotFoundError(
            f"no sentient-core store at {path} (is --data-dir right? `ingest`, `learn`"
            " and `serve` create one; other commands never do)"
        ) from None


def open_core(args: argparse.Namespace, *, readonly: bool = False, create: bool = False):
    """The :class:`~sentient_core.core.Core` on ``--data-dir`` (imported when needed).

    Only commands that put something into memory pass ``create=True``; the
    others fail with :class:`~sentient_core.store.StoreNotFoundError` on a path
    that holds no store, so a typo in ``--data-dir`` never makes an empty one.
    """
    from sentient_core.core import Core

    path = _store_path(args)
    with _no_store_here(path):
        return Core(path, readonly=readonly, create=create and not readonly)


def open_store(args: argparse.Namespace, *, readonly: bool, create: bool = False):
    """The store alone (commands that need no memory mirror or observer); see
    :func:`open_core` for ``create``."""
    from sentient_core.core import CODE_DIM
    from sentient_core.store import Store

    path = _store_path(args)
    with _no_store_here(path):
        return Store.open(
            path, code_dim=CODE_DIM, readonly=readonly, create=create and not readonly
        )


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


def text(value: str) -> str:
    """argparse type: text with something in it (a query, a topic, a question)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


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


class Interrupt:
    """Whether Ctrl-C was pressed inside :func:`interruptible` (truthy once it was)."""

    def __init__(self) -> None:
        self.requested = False

    def __bool__(self) -> bool:
        return self.requested


@contextlib.contextmanager
def interruptible(what: str) -> Iterator[Interrupt]:
    """Turn the first Ctrl-C into a request to stop at the next safe point.

    Inside the block the first SIGINT only sets the yielded :class:`Interrupt`
    and prints ``what`` (how the command stops) on stderr; the command checks
    it between units of work, finishes cleanly and exits 130. A second Ctrl-C
    raises :class:`KeyboardInterrupt` as usual (the user insists). Outside the
    main thread (where Python cannot install handlers) nothing changes.
    """
    flag = Interrupt()

    def handle(signum: int, frame: FrameType | None) -> None:
        # Only a plain attribute and an unbuffered write: a handler runs between any
        # two bytecodes of the main thread, which may hold a lock or be inside a
        # buffered write to stderr (a re-entrant write would raise).
        flag.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with contextlib.suppress(OSError):
            os.write(2, f"\ninterrupt: {what} (Ctrl-C again to abort now)\n".encode())

    try:
        previous = signal.signal(signal.SIGINT, handle)
    except ValueError:  # not the main thread
        yield flag
        return
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


def warm_kernels(show: bool) -> list[ModuleWarmup]:
    """Compile the kernels (or load them from the Numba cache) before timed work.

    With ``show``, a progress line on stderr names the module being compiled
    (the first run compiles for a minute or more on two cores; later runs load
    the cache in about two seconds) and, when something was compiled, a last
    line says how long it took. Returns :func:`sentient_kernels.warmup.warmup`'s per-module report.
    """
    from sentient_core.progress import ProgressLine
    from sentient_kernels.config import CACHE
    from sentient_kernels.warmup import warmup

    bar = ProgressLine()

    def step(done: int, total: int, module: str) -> None:
        label = f"compiling kernels {done}/{total}: {module}" if module else "kernels ready"
        bar.update(done / total, label, force=done == total)

    report = warmup(progress=step if show else None)
    bar.done()
    seconds = sum(w.seconds for w in report)
    compiled = sum(w.cache_misses for w in report)
    if show and compiled:  # loading a warm cache takes ~2 s: not worth a line
        later = (
            "later runs load them from the Numba cache"
            if CACHE
            else "the Numba cache is off (SENTIENT_NUMBA_CACHE=0): every run compiles"
        )
        print(
            f"kernels ready in {seconds:.1f} s ({compiled} compiled; {later})",
            file=sys.stderr,
            flush=True,
        )
    return report
