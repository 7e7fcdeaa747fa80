"""Command-line interface: argument parsing and printing only.

Entry points: ``python cli.py ...`` from a checkout, or the ``sentient``
console command installed with the package. Both call :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from sentient_core import __version__

__all__ = ["build_parser", "main"]


def _import_bench():
    """Import the ``bench`` package, which lives in the source checkout (not in the wheel)."""
    try:
        import bench.runner as runner
    except ModuleNotFoundError:
        root = Path(__file__).resolve().parent.parent
        if not (root / "bench" / "cases.py").is_file():
            raise SystemExit(
                "error: `bench` needs a source checkout of sentient-core "
                "(the bench/ folder is not part of the installed package)"
            ) from None
        sys.path.insert(0, str(root))
        import bench.runner as runner
    return runner


def _cmd_bench(args: argparse.Namespace) -> int:
    runner = _import_bench()
    from kernels.warmup import warmup

    def progress(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    if not args.json:
        print("compiling kernels…", file=sys.stderr, flush=True)
    warm = warmup()
    if not args.json:
        total = sum(w.seconds for w in warm)
        print(f"kernels ready in {total:.2f} s", file=sys.stderr, flush=True)
    results = runner.run(scale=args.scale, only=args.only, repeat=args.repeat, progress=progress)
    if not results:
        print(f"error: no benchmark matches --only {args.only!r}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps({"scale": args.scale, "results": [r.as_dict() for r in results]}, indent=2)
        )
    else:
        print(runner.format_table(results))
        missed = [r for r in results if r.met is False]
        if args.scale == 1.0 and missed:
            print(f"\n{len(missed)} target(s) not met on this machine (see the 'met' column).")
    return 0


def _cmd_warmup(args: argparse.Namespace) -> int:
    from kernels._config import CACHE
    from kernels.warmup import warmup

    results = warmup()
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


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (0 < v <= 1):
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {v}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser for every sub-command."""
    p = argparse.ArgumentParser(
        prog="sentient",
        description="sentient-core: autonomous-learning core (Numba kernels over LMDB).",
    )
    p.add_argument("--version", action="version", version=f"sentient-core {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    b = sub.add_parser(
        "bench",
        help="benchmark every kernel against its peer (same-run medians and ratios)",
        description="Time each kernel against a peer doing the same work, alternating "
        "ours/peer, and print medians, ratio (peer/ours) and whether the target is met.",
    )
    b.add_argument(
        "--scale",
        type=_positive_float,
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
        type=_positive_int,
        default=None,
        help="timed calls per side (default: per case)",
    )
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.set_defaults(func=_cmd_bench)

    w = sub.add_parser(
        "warmup", help="compile every kernel (or load it from the Numba cache) and report the time"
    )
    w.add_argument("--json", action="store_true", help="print JSON")
    w.set_defaults(func=_cmd_warmup)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
