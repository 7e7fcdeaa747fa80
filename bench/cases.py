"""Benchmark cases shared by the pytest-benchmark suites and ``cli.py bench``.

A :class:`Case` pairs one of our callables with a peer callable doing the same
work (numpy, faiss, river, ...). Both are zero-argument closures over inputs
prepared once by the case factory, so timing measures only the work itself.
Each ``bench/cases_<module>.py`` exposes ``cases(scale: float) -> list[Case]``;
``scale=1.0`` gives the sizes the targets are stated for, small values give a
quick smoke run (used by the test-suite to prove the table still works).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["MODULES", "Case", "collect"]

# Order of the table.
MODULES = (
    "bench.cases_sedenion",
    "bench.cases_smf",
    "bench.cases_prsc",
    "bench.cases_holographic",
    "bench.cases_scorer",
    "bench.cases_credit",
    "bench.cases_observer",
    "bench.cases_memory",
    "bench.cases_integration",
    "bench.cases_learner",
)


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
        Zero-argument callable running the peer once; ``None`` if the peer is
        unavailable (then ``peer_name`` says why).
    peer_name : str
        Short name of the peer, e.g. ``"numpy einsum"``.
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
        Timed calls per side (alternated A/B/A/B).
    check : callable or None
        Optional zero-argument callable run once before timing that raises if
        ``ours`` and ``peer`` disagree (so we never time a wrong answer).
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
    check: Callable[[], None] | None = None
    notes: dict = field(default_factory=dict)


def collect(scale: float = 1.0, only: str | None = None) -> list[Case]:
    """Build every case from every module (optionally those whose kernel name contains ``only``)."""
    import importlib

    out: list[Case] = []
    for mod_name in MODULES:
        mod = importlib.import_module(mod_name)
        out.extend(c for c in mod.cases(scale) if only is None or only in c.kernel)
    return out
