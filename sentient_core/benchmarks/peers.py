"""Optional peer libraries of the benchmark table: which are importable, how to install the rest.

numpy, numba and py-lmdb peers are dependencies of the package and always
present. The others are imported through :func:`load`, which remembers why an
import failed so ``sentient bench`` can say which peers are missing, which rows
they would have produced and the exact command that installs them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from sentient_core.errors import NotFoundError

__all__ = ["BENCH_EXTRA", "PEERS", "MissingPeer", "Peer", "load", "missing"]

BENCH_EXTRA = "pip install 'sentient-core[bench]'"


@dataclass(frozen=True)
class Peer:
    """An optional peer library: import name, distribution on PyPI, install command."""

    name: str
    package: str
    install: str


# Every optional peer any case module may use, keyed by import name.
PEERS: dict[str, Peer] = {
    "faiss": Peer("faiss", "faiss-cpu", BENCH_EXTRA),
    "river": Peer("river", "river", BENCH_EXTRA),
    "sklearn": Peer("sklearn", "scikit-learn", BENCH_EXTRA),
    "bm25s": Peer("bm25s", "bm25s", BENCH_EXTRA),
}


@dataclass(frozen=True)
class MissingPeer:
    """A peer that could not be imported, with the error that import raised."""

    peer: Peer
    error: str

    def as_dict(self) -> dict:
        return {
            "peer": self.peer.name,
            "package": self.peer.package,
            "install": self.peer.install,
            "error": self.error,
        }


_loaded: dict[str, ModuleType | None] = {}
_errors: dict[str, str] = {}


def load(name: str) -> ModuleType | None:
    """Import peer ``name`` (a key of :data:`PEERS`); ``None`` if that import fails.

    Any ``ImportError`` counts as missing (not installed, or installed but
    broken, e.g. a shared library that does not load); the message is kept.
    """
    if name not in PEERS:
        raise NotFoundError(f"unknown benchmark peer {name!r}; add it to PEERS")
    if name not in _loaded:
        try:
            _loaded[name] = importlib.import_module(name)
        except ImportError as exc:
            _loaded[name] = None
            _errors[name] = f"{type(exc).__name__}: {exc}"
    return _loaded[name]


def missing() -> list[MissingPeer]:
    """Every peer of :data:`PEERS` that does not import, in registry order."""
    return [MissingPeer(PEERS[n], _errors[n]) for n in PEERS if load(n) is None]
