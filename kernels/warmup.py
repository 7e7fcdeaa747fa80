"""Compile every kernel once, up front, and report how long it took.

Numba compiles lazily on first call; a learning loop must never pay that cost
mid-iteration. :func:`warmup` calls each module's ``_warmup`` (tiny inputs with
the exact dtypes used in real calls). With the on-disk cache on (see
:mod:`sentient_kernels.config`) the first process writes the machine code to the
on-disk cache and later processes only load it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from numba.core.registry import CPUDispatcher

from sentient_kernels.config import CACHE

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: no cross-process lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["MODULES", "ModuleWarmup", "compile_lock", "lock_path", "warmup"]

MODULES = (
    "sedenion",
    "smf",
    "prsc",
    "holographic",
    "interference",
    "dot_i8",
    "quantized",
    "scorer",
    "credit",
    "tick",
    "text",
    "excitation",
    "text_one",
    "text_batch",
    "keyword_pick",
    "spaces",
    "postings",
    "colrows",
    "lexical",
    "segments",
    "bounds",
    "bm25",
    "maxscore",
    "doc_freqs",
    "maxscore_hybrid",
    "overlay",
    "overlay_q8",
    "scored_hybrid",
    "maxscore_scored",
)


@dataclass(frozen=True)
class ModuleWarmup:
    """Warm-up outcome of one kernel module."""

    module: str
    seconds: float
    kernels: int
    cache_hits: int
    cache_misses: int

    def as_dict(self) -> dict:
        return {
            "module": self.module,
            "seconds": self.seconds,
            "kernels": self.kernels,
            "cache_hits": self.cache_hits,
            "cache_misses": self.cache_misses,
        }


def _dispatchers(mod) -> list[CPUDispatcher]:
    return [v for v in vars(mod).values() if isinstance(v, CPUDispatcher)]


def _cache_counts(dispatchers: list[CPUDispatcher]) -> tuple[int, int]:
    hits = misses = 0
    for d in dispatchers:
        stats = d.stats
        hits += sum(stats.cache_hits.values())
        misses += sum(stats.cache_misses.values())
    return hits, misses


def lock_path() -> Path:
    """The lock file that serialises compiling into this installation's Numba cache."""
    where = str(Path(__file__).resolve().parent).encode()
    return (
        Path(tempfile.gettempdir()) / f"sentient-numba-{hashlib.sha1(where).hexdigest()[:12]}.lock"
    )


@contextlib.contextmanager
def compile_lock() -> Iterator[None]:
    """Hold an exclusive lock across processes while kernels compile into the cache.

    Numba numbers a function's cached overloads in its index file by reading the
    index, picking the first free number and writing it back: two processes that
    compile different signatures of one function at once can both take number 1,
    and the index then names the other process's machine code for a signature
    (a segmentation fault when it is loaded; seen with two test workers warming a
    cold cache under load). One process compiles at a time; the others wait and
    then load what it cached.
    """
    if fcntl is None or not CACHE:
        yield
        return
    with open(lock_path(), "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def warmup(
    modules: tuple[str, ...] = MODULES,
    *,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[ModuleWarmup]:
    """Compile (or load from cache) every kernel of the given modules.

    Parameters
    ----------
    modules : tuple of str
        Names of ``kernels`` submodules; default all.
    progress : callable, optional
        ``progress(done, total, module)`` before each module is compiled
        (``module`` is the one starting; a cold cache takes seconds per module),
        then ``progress(total, total, "")`` once every module is ready.

    Returns
    -------
    list of ModuleWarmup
        Per-module wall time, number of kernels, and Numba cache hits/misses
        (a miss means the kernel was compiled in this process).
    """
    for name in modules:  # all names first: a typo must not cost a compile of the others
        if name not in MODULES:
            raise ValueError(f"modules: unknown kernel module {name!r}; choose from {MODULES}")
    out = []
    with compile_lock():  # one process compiles into the cache at a time
        for i, name in enumerate(modules):
            if progress is not None:
                progress(i, len(modules), name)
            mod = importlib.import_module(f"sentient_kernels.{name}")
            t0 = time.perf_counter()
            mod._warmup()
            dt = time.perf_counter() - t0
            disp = _dispatchers(mod)
            hits, misses = _cache_counts(disp)
            out.append(ModuleWarmup(name, dt, len(disp), hits, misses))
    if progress is not None:
        progress(len(modules), len(modules), "")
    return out
