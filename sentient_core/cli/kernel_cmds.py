"""``bench`` and ``warmup``: the numeric kernels, timed and compiled."""

from __future__ import annotations

import argparse
import json
import sys

from sentient_core.cli.common import positive_float, positive_int, warm_kernels

__all__ = ["register"]


def _cmd_bench(args: argparse.Namespace) -> int:
    from sentient_core.benchmarks import runner

    def progress(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    warm_kernels(show=not args.json)
    report = runner.run(scale=args.scale, only=args.only, repeat=args.repeat, progress=progress)
    if not report.results:
        print(f"error: no benchmark matches --only {args.only!r}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {
                    "scale": args.scale,
                    "missing_peers": [m.as_dict() for m in report.missing],
                    "results": [r.as_dict() for r in report.results],
                },
                indent=2,
            )
        )
    else:
        if report.missing:
            print(runner.format_missing(report.missing), end="\n\n")
        print(runner.format_table(report.results))
        missed = [r for r in report.results if r.met is False]
        if args.scale == 1.0 and missed:
            print(f"\n{len(missed)} target(s) not met on this machine (see the 'met' column).")
    return 0


def _cmd_warmup(args: argparse.Namespace) -> int:
    from sentient_kernels.config import CACHE

    # The table comes at the end; a cold cache compiles for minutes on a small
    # machine, so the progress line (stderr) says which module is compiling.
    results = warm_kernels(show=not args.json)
    total = sum(w.seconds for w in results)
    if args.json:
        print(
            json.dumps(
                {"cache": CACHE, "total_seconds": total, "modules": [w.as_dict() for w in results]},
                indent=2,
            )
        )
        return 0
    print(f"{'module':<12} {'seconds':>8} {'kernels':>8} {'from cache':>11} {'compiled':>9}")
    for w in results:
        print(
            f"{w.module:<12} {w.seconds:>8.2f} {w.kernels:>8} {w.cache_hits:>11} {w.cache_misses:>9}"
        )
    print(f"{'total':<12} {total:>8.2f}   (numba cache {'on' if CACHE else 'off'})")
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    b = sub.add_parser(
        "bench",
        help="benchmark every kernel against its peer (same-run medians and ratios)",
        description="Time each kernel against a peer doing the same work, alternating "
        "ours/peer, and print medians, ratio (peer/ours) and whether the target is met.",
    )
    b.add_argument(
        "--scale",
        type=positive_float,
        default=1.0,
        help="problem-size scale in (0, 1]; 1 = the sizes the targets are stated for",
    )
    b.add_argument(
        "--quick",
        dest="scale",
        action="store_const",
        const=0.01,
        help="same as --scale 0.01 (a smoke run)",
    )
    b.add_argument("--only", metavar="NAME", help="only kernels whose name contains NAME")
    b.add_argument(
        "--repeat",
        type=positive_int,
        default=None,
        help="timed calls per side (default: per case)",
    )
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.set_defaults(func=_cmd_bench)

    w = sub.add_parser(
        "warmup",
        help="compile every kernel (or load it from the Numba cache) and report the time",
        description="Compile every kernel (the first run, tens of seconds: a progress line on"
        " stderr names the module) or load it from the Numba cache, then print a table of"
        " seconds, kernels, cache hits and compiles per module.",
    )
    w.add_argument("--json", action="store_true", help="print JSON")
    w.set_defaults(func=_cmd_warmup)
