"""Same-run A/B timing of :class:`bench.cases.Case` pairs and the table printer."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bench.cases import Case

__all__ = ["Result", "format_table", "measure", "run"]


@dataclass(frozen=True)
class Result:
    """Medians of one case (seconds per call)."""

    case: Case
    ours_s: float
    peer_s: float | None

    @property
    def ratio(self) -> float | None:
        """Peer time / our time, per item if the peer does less work (> 1: we are faster)."""
        if self.peer_s is None or self.ours_s <= 0:
            return None
        c = self.case
        if c.peer_items and c.items:
            return (self.peer_s / c.peer_items) / (self.ours_s / c.items)
        return self.peer_s / self.ours_s

    @property
    def throughput(self) -> float | None:
        return self.case.items / self.ours_s if self.case.items and self.ours_s > 0 else None

    @property
    def gbps(self) -> float | None:
        return (
            self.case.nbytes / self.ours_s / 1e9 if self.case.nbytes and self.ours_s > 0 else None
        )

    @property
    def met(self) -> bool | None:
        if self.case.target_met is None:
            return None
        return bool(self.case.target_met(self.ours_s, self.peer_s))

    def as_dict(self) -> dict:
        c = self.case
        return {
            "kernel": c.kernel,
            "size": c.size,
            "ours_median_s": self.ours_s,
            "peer": c.peer_name,
            "peer_median_s": self.peer_s,
            "ratio": self.ratio,
            "throughput": self.throughput,
            "item_unit": c.item_unit,
            "gb_per_s": self.gbps,
            "target": c.target,
            "target_met": self.met,
        }


def _time_once(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(case: Case, repeat: int | None = None, settle: float = 0.0) -> Result:
    """Warm both sides once, then alternate ours/peer ``repeat`` times; medians.

    ``settle`` seconds of sleep follow every timed call: BLAS and OpenMP worker
    threads keep spinning for ~0.1 s after a call returns and would otherwise
    steal the cores from whichever side runs next.
    """
    n = max(1, repeat if repeat is not None else case.repeat)
    if case.check is not None:
        case.check()
    case.ours()
    if case.peer is not None:
        case.peer()
    ours: list[float] = []
    peer: list[float] = []
    for _ in range(n):
        time.sleep(settle)
        ours.append(_time_once(case.ours))
        if case.peer is not None:
            time.sleep(settle)
            peer.append(_time_once(case.peer))
    return Result(case, statistics.median(ours), statistics.median(peer) if peer else None)


def _fmt_time(s: float | None) -> str:
    if s is None:
        return "—"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.2f} µs"
    return f"{s * 1e9:.0f} ns"


def _fmt_rate(r: Result) -> str:
    parts = []
    if r.throughput is not None:
        t = r.throughput
        scaled = (
            f"{t / 1e9:.2f}G"
            if t >= 1e9
            else f"{t / 1e6:.2f}M"
            if t >= 1e6
            else f"{t / 1e3:.1f}k"
            if t >= 1e3
            else f"{t:.0f}"
        )
        parts.append(f"{scaled} {r.case.item_unit}/s")
    if r.gbps is not None:
        parts.append(f"{r.gbps:.1f} GB/s" if r.gbps >= 0.1 else f"{r.gbps * 1e3:.1f} MB/s")
    return ", ".join(parts)


def format_table(results: Iterable[Result]) -> str:
    """Render results as a plain-text table (kernel, size, ours, peer, ratio, ...)."""
    header = (
        "kernel",
        "size",
        "ours median",
        "peer",
        "peer median",
        "ratio",
        "throughput",
        "target",
        "met",
    )
    rows = [header]
    for r in results:
        met = r.met
        rows.append(
            (
                r.case.kernel,
                r.case.size,
                _fmt_time(r.ours_s),
                r.case.peer_name,
                _fmt_time(r.peer_s),
                "—"
                if r.ratio is None
                else f"{r.ratio:.1f}×"
                if r.ratio >= 1
                else f"{r.ratio:.3f}×",
                _fmt_rate(r),
                r.case.target,
                "" if met is None else ("yes" if met else "NO"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for k, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(
    scale: float = 1.0,
    only: str | None = None,
    repeat: int | None = None,
    progress: Callable[[str], None] | None = None,
    settle: float | None = None,
) -> list[Result]:
    """Collect and measure every case; ``progress`` gets a line per case.

    ``settle`` defaults to 0.2 s at full scale and 0 for smoke runs.
    """
    if settle is None:
        settle = 0.2 if scale >= 1.0 else 0.0
    from bench.cases import collect

    results = []
    cases = collect(scale, only)
    for i, case in enumerate(cases, 1):
        if progress is not None:
            progress(f"[{i}/{len(cases)}] {case.kernel} {case.size} vs {case.peer_name}")
        results.append(measure(case, repeat, settle))
    return results
