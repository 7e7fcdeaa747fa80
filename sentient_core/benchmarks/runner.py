"""Same-run A/B timing of :class:`~sentient_core.benchmarks.cases.Case` pairs, the table printer
and the missing-peer report."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from sentient_core.benchmarks import cases as registry
from sentient_core.benchmarks import peers
from sentient_core.benchmarks.cases import Case, collect

__all__ = [
    "MissingRows",
    "Report",
    "Result",
    "format_missing",
    "format_table",
    "measure",
    "missing_rows",
    "plan",
    "run",
]


@dataclass(frozen=True)
class Result:
    """Medians of one case (seconds per call)."""

    case: Case
    ours_s: float
    peer_s: float | None
    floor_s: float | None = None

    @property
    def of_floor(self) -> float | None:
        """Floor time / our time: 1.0 = ours runs at the physical limit, 0.5 = twice its time."""
        if self.floor_s is None or self.ours_s <= 0:
            return None
        return self.floor_s / self.ours_s

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
            "peer_missing": c.peer_missing,
            "floor": c.floor_name or None,
            "floor_median_s": self.floor_s,
            "of_floor": self.of_floor,
        }


def _time_once(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(case: Case, repeat: int | None = None, settle: float = 0.0) -> Result:
    """Warm both sides once, then time each ``repeat`` times, interleaved; medians.

    Rounds alternate which side goes first (ours/peer, then peer/ours; the
    floor, when the case has one, is a third side in the same rounds), so a
    drift in the machine's speed during the run (another process, a clock
    change) weighs on both sides alike instead of always on the second.

    ``settle`` seconds of sleep come before every timed call of a case whose
    ``settle`` is true: BLAS and OpenMP worker threads keep spinning for
    ~0.1 s after a call returns and would otherwise steal the cores from
    whichever side runs next.
    """
    n = max(1, repeat if repeat is not None else case.repeat)
    pause = settle if case.settle else 0.0
    if case.check is not None:
        case.check()
    sides = [("ours", case.ours)] + ([("peer", case.peer)] if case.peer is not None else [])
    # A floor that is the peer itself (raw LMDB puts) reuses the peer's timings.
    floor_is_peer = case.floor is not None and case.floor is case.peer
    if case.floor is not None and not floor_is_peer:
        sides.append(("floor", case.floor))
    for _side, fn in sides:
        fn()
    times: dict[str, list[float]] = {side: [] for side, _ in sides}
    for i in range(n):
        for side, fn in sides if i % 2 == 0 else sides[::-1]:
            if pause:
                time.sleep(pause)
            times[side].append(_time_once(fn))

    def median(side: str) -> float | None:
        got = times.get(side)
        return statistics.median(got) if got else None

    ours = statistics.median(times["ours"])
    return Result(case, ours, median("peer"), median("peer" if floor_is_peer else "floor"))


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
    """Render results as a plain-text table (kernel, size, ours, peer, ratio, ...).

    Rows with a physical floor show ``of floor`` (floor median / ours median)
    and the floor's median; a legend after the table names each floor.
    """
    results = list(results)
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
        "of floor",
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
                "" if r.of_floor is None else f"{r.of_floor:.2f} ({_fmt_time(r.floor_s)})",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for k, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    floors = {(r.case.kernel, r.case.floor_name) for r in results if r.floor_s is not None}
    if floors:
        # No blank line: callers split the note before the table from the table on one.
        lines.append("of floor = the floor's median / ours (1.00 = at the physical limit); floors:")
        lines.extend(f"  {kernel}: {name}" for kernel, name in sorted(floors))
    return "\n".join(lines)


@dataclass(frozen=True)
class MissingRows:
    """A peer library that is not importable and the table rows it would have produced."""

    missing: peers.MissingPeer
    rows: list[Case]

    def as_dict(self) -> dict:
        return self.missing.as_dict() | {
            "rows": [{"kernel": c.kernel, "size": c.size, "peer": c.peer_name} for c in self.rows]
        }


@dataclass(frozen=True)
class Report:
    """What ``sentient bench`` prints: measured rows and the missing peers."""

    results: list[Result]
    missing: list[MissingRows] = field(default_factory=list)


def plan(cases: Iterable[Case]) -> tuple[list[Case], list[Case]]:
    """Split cases into those to time and those whose peer library is missing.

    A row whose peer is missing is not timed, except that ours is still timed
    alone (peer column "<peer> not installed") when no other row measures the
    same (kernel, size), so no kernel disappears from the table.
    """
    cases = list(cases)
    timed_keys = {(c.kernel, c.size) for c in cases if c.peer_missing is None}
    to_time: list[Case] = []
    skipped: list[Case] = []
    for c in cases:
        if c.peer_missing is None:
            to_time.append(c)
            continue
        skipped.append(c)
        if (c.kernel, c.size) not in timed_keys:
            timed_keys.add((c.kernel, c.size))
            to_time.append(
                replace(c, peer_name=f"{c.peer_missing} not installed", target_met=None, check=None)
            )
    return to_time, skipped


def missing_rows(skipped: Iterable[Case]) -> list[MissingRows]:
    """Every peer that does not import, with the skipped rows that needed it."""
    skipped = list(skipped)
    return [
        MissingRows(m, [c for c in skipped if c.peer_missing == m.peer.name])
        for m in peers.missing()
    ]


def format_missing(missing: Iterable[MissingRows]) -> str:
    """The note printed before the table: missing peers, their rows, the install commands."""
    missing = list(missing)
    if not missing:
        return ""
    lines = ["missing benchmark peers (their rows are not in the table):"]
    for m in missing:
        p = m.missing.peer
        name = p.name if p.package == p.name else f"{p.name} ({p.package})"
        why = m.missing.error
        why = "" if why.startswith("ModuleNotFoundError") else f" [{why}]"
        if not m.rows:
            lines.append(f"  {name}: no selected row needs it{why}")
            continue
        lines.append(f"  {name}: {len(m.rows)} row{'' if len(m.rows) == 1 else 's'}{why}")
        lines.extend(f"    {c.kernel} [{c.size}] vs {c.peer_name}" for c in m.rows)
    lines.append("install them with:")
    commands: dict[str, list[str]] = {}
    for m in missing:
        commands.setdefault(m.missing.peer.install, []).append(m.missing.peer.name)
    width = max(len(cmd) for cmd in commands)
    lines.extend(f"  {cmd.ljust(width)}  # {', '.join(names)}" for cmd, names in commands.items())
    return "\n".join(lines)


def run(
    scale: float = 1.0,
    only: str | None = None,
    repeat: int | None = None,
    progress: Callable[[str], None] | None = None,
    settle: float | None = None,
) -> Report:
    """Collect every case, time those whose peers are installed; ``progress`` gets a line per case.

    ``settle`` defaults to 0.2 s at full scale and 0 for smoke runs. Temporary
    fixtures registered with :func:`~sentient_core.benchmarks.cases.on_close`
    are removed when the run ends, also when it fails.
    """
    if settle is None:
        settle = 0.2 if scale >= 1.0 else 0.0
    try:
        to_time, skipped = plan(collect(scale, only))
        results = []
        for i, case in enumerate(to_time, 1):
            if progress is not None:
                progress(f"[{i}/{len(to_time)}] {case.kernel} {case.size} vs {case.peer_name}")
            results.append(measure(case, repeat, settle))
    finally:
        # Temporary fixtures (the learner's data folder) go with the run, even a failed one.
        registry.close()
    return Report(results, missing_rows(skipped))
