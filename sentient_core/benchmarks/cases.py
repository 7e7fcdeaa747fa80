"""Benchmark cases shared by ``sentient bench`` and the pytest-benchmark suites in ``bench/``.

A :class:`Case` pairs one of our callables with a peer callable doing the same
work (numpy, faiss, river, ...). Both are zero-argument closures over inputs
prepared once by the case factory, so timing measures only the work itself.
Each ``cases_<domain>.py`` next to this file exposes
``cases(scale: float) -> list[Case]``; ``scale=1.0`` gives the sizes the
targets are stated for, small values give a quick smoke run (used by the
test-suite to prove the table still works).

A case module is registered by adding its domain to :data:`MODULES` (one
line: ``"single",`` registers ``cases_single.py``). Each module also names the
kernels its cases time in a ``KERNELS`` tuple, so ``sentient bench --only X``
calls only the factories of modules with a kernel matching X and builds no other
fixture (a 1M-trace store takes minutes); a test checks every ``KERNELS`` against
the rows the module really returns. A fixture that holds a temporary folder
registers its removal with :func:`on_close`; the runner calls :func:`close` in a
``finally`` (and at exit, for callers such as ``bench/test_bench.py`` that
collect without the runner). Optional peers are imported
with :func:`sentient_core.benchmarks.peers.load`; when one is missing, the case
is still returned with ``peer=None`` and ``peer_missing`` set to its name, so
the runner can say which rows the missing peer would have produced.
"""

from __future__ import annotations

import atexit
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

__all__ = ["MODULES", "Case", "close", "collect", "module", "on_close", "selected"]

# The registry: one domain per line, in the order of the table. Domain ``x``
# is the module ``sentient_core.benchmarks.cases_x``.
MODULES = (
    "sedenion",
    "smf",
    "prsc",
    "holographic",
    "quantized",
    "scorer",
    "credit",
    "observer",
    "memory",
    "lexical",
    "integration",
    "learner",
    "single",
)


# Removals of temporary fixtures (folders, stores), last registered first.
_CLOSERS: list[Callable[[], None]] = []


def on_close(fn: Callable[[], None]) -> None:
    """Register ``fn`` to run at :func:`close` (the end of a bench run, or at exit)."""
    _CLOSERS.append(fn)


def close() -> None:
    """Run and forget every registered closer, last first; each runs even if one fails."""
    errors: list[BaseException] = []
    while _CLOSERS:
        try:
            _CLOSERS.pop()()
        except Exception as exc:  # the others must still run
            errors.append(exc)
    if errors:
        raise errors[0]


atexit.register(close)


def module(domain: str) -> ModuleType:
    """Import the case module of ``domain`` (an entry of :data:`MODULES`)."""
    return importlib.import_module(f"{__package__}.cases_{domain}")


@dataclass(frozen=True)
class Case:
    """One row of the benchmark table.

    Attributes
    ----------
    kernel : str
        Dotted name of what is measured, e.g. ``"sedenion.mul_batch"``.
    size : str
        Human-readable problem size, e.g. ``"1M pairs"``.
    ours : callable
        Zero-argument callable running our implementation once.
    peer : callable or None
        Zero-argument callable running the peer once; ``None`` when the peer
        library is missing (then ``peer_missing`` names it) or for a row that
        times ours alone.
    peer_name : str
        Short name of the peer, e.g. ``"numpy einsum"`` (also when missing).
    items : int
        Work items per call (products, oscillator-steps, rows, samples); used
        for a throughput column. 0 = no throughput.
    item_unit : str
        Unit of ``items`` ("products", "osc-steps", ...).
    nbytes : int
        Bytes of input read per call by ``ours``; gives a GB/s column.
    target : str
        The stated target in words ("≥ 25M products/s and ≥ 30× peer").
    target_met : callable or None
        ``target_met(ours_median_s, peer_median_s_or_None) -> bool``.
    peer_items : int
        Work items per peer call when the peer does a smaller amount of the
        same work (a slow peer on a subset); ratios are then per item.
        0 = same work as ``ours``.
    repeat : int
        Timed calls per side (alternated A/B, B/A, A/B, ...); the row reports medians.
    settle : bool
        Sleep the runner's settle time before each timed call (the default):
        rows that start parallel kernels need it, or threads still spinning
        from one side slow the other. Rows of microsecond calls set False: a
        sleep before about a millisecond of work times the core waking up
        (``sedenion.mul`` measured 5.6 µs a call after each 0.2 s sleep, 0.8 µs
        without).
    check : callable or None
        Optional zero-argument callable run once before timing that raises if
        ``ours`` and ``peer`` disagree (so we never time a wrong answer).
    peer_missing : str or None
        Name (a key of :data:`~sentient_core.benchmarks.peers.PEERS`) of the
        optional peer library this row needs and could not import.
    notes : dict
        Extra facts reported with the row (e.g. the store build time).
    floor : callable or None
        Zero-argument callable doing the least work the hardware needs for
        what ``ours`` does — streaming the same bytes once for a scan, raw
        LMDB puts of the same bytes for integration — timed in the same rounds
        so the row says how close ours runs to the physical limit. When it is
        the very callable ``peer``, the peer's timings are reused.
    floor_name : str
        What ``floor`` does, e.g. ``"parallel stream read of the 1.0 GB"``.
    """

    kernel: str
    size: str
    ours: Callable[[], object]
    peer: Callable[[], object] | None
    peer_name: str
    items: int = 0
    item_unit: str = ""
    nbytes: int = 0
    target: str = ""
    target_met: Callable[[float, float | None], bool] | None = None
    peer_items: int = 0
    repeat: int = 7
    settle: bool = True
    check: Callable[[], None] | None = None
    peer_missing: str | None = None
    notes: dict = field(default_factory=dict)
    floor: Callable[[], object] | None = None
    floor_name: str = ""


def selected(only: str | None = None) -> list[str]:
    """The domains whose ``KERNELS`` have a name containing ``only`` (all when ``None``)."""
    return [d for d in MODULES if only is None or any(only in k for k in module(d).KERNELS)]


def collect(scale: float = 1.0, only: str | None = None) -> list[Case]:
    """Build the cases whose kernel name contains ``only`` (every case when ``None``).

    Only the modules that declare a matching kernel are asked for their cases,
    so no other module's fixtures are built. Cases whose peer is missing are
    included (``peer_missing`` set); the runner decides what to time.
    """
    out: list[Case] = []
    for domain in selected(only):
        out.extend(c for c in module(domain).cases(scale) if only is None or only in c.kernel)
    return out
