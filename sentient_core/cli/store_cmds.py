"""``check``, ``backup``, ``export`` and ``import``: looking after a store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sentient_core.cli.common import open_store

__all__ = ["register"]

EXIT_PROBLEMS = 1
"""``check`` exit code when the store opens but has integrity problems."""


def _cmd_check(args: argparse.Namespace) -> int:
    # Imported to register their record tables for the check.
    import sentient_core.layers
    import sentient_core.metamemory
    import sentient_core.recipes  # noqa: F401
    from sentient_core.store import check_integrity

    with open_store(args, readonly=True) as store:
        report = check_integrity(store)
    if args.json:
        print(json.dumps({"path": str(store.path), **_builtins(report)}, indent=2))
    else:
        state = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        print(
            f"{store.path}: {state} — {report.traces} traces, {report.rows} code rows,"
            f" {report.links} links"
        )
        for line in report.problems:
            print(f"  {line}")
    return 0 if report.ok else EXIT_PROBLEMS


def _cmd_backup(args: argparse.Namespace) -> int:
    # Imported to register their record tables for the check.
    import sentient_core.layers
    import sentient_core.metamemory
    import sentient_core.recipes  # noqa: F401
    from sentient_core.store import Store, check_integrity

    with open_store(args, readonly=True) as store:
        dest = store.copy(args.dest)
    with Store.open(dest, readonly=True) as copy:
        report = check_integrity(copy)
    size = sum(f.stat().st_size for f in Path(dest).iterdir() if f.is_file())
    if args.json:
        out = {
            "source": str(store.path),
            "dest": str(dest),
            "traces": report.traces,
            "links": report.links,
            "bytes": size,
            "ok": report.ok,
            "problems": list(report.problems),
        }
        print(json.dumps(out, indent=2))
    else:
        print(
            f"backup of {store.path} in {dest}: {report.traces} traces, {report.links} links,"
            f" {size / 1e6:.1f} MB (compacted); integrity {'ok' if report.ok else 'NOT ok'}"
        )
    return 0 if report.ok else EXIT_PROBLEMS


def _cmd_export(args: argparse.Namespace) -> int:
    from sentient_core.store.transfer import TransferCounts, export_lines

    counts = TransferCounts()
    with open_store(args, readonly=True) as store:
        out = sys.stdout.buffer if args.output == "-" else open(args.output, "wb")  # noqa: SIM115
        try:
            for line in export_lines(store, events=args.events, counts=counts):
                out.write(line + b"\n")
        finally:
            if out is not sys.stdout.buffer:
                out.close()
            else:
                out.flush()
    print(
        f"exported {counts.traces} traces, {counts.links} links, {counts.records} records",
        file=sys.stderr,
    )
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from sentient_core.store.transfer import import_lines

    # Open the input first: a missing file must not leave an empty store behind.
    source = sys.stdin.buffer if args.input == "-" else open(args.input, "rb")  # noqa: SIM115
    try:
        with open_store(args, readonly=False, create=True) as store:
            counts = import_lines(store, source)
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    if args.json:
        out = {
            "path": str(store.path),
            "traces": counts.traces,
            "links": counts.links,
            "records": counts.records,
        }
        print(json.dumps(out, indent=2))
    else:
        print(
            f"imported {counts.traces} traces, {counts.links} links, {counts.records} records"
            f" into {store.path}"
        )
    return 0


def _builtins(report) -> dict:
    import msgspec

    return msgspec.to_builtins(report)


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    chk = sub.add_parser(
        "check",
        parents=[common],
        help="check the store's integrity (exit 0 ok, 1 problems, 2 cannot open)",
        description="Read one snapshot and check records, code rows, counters, links and"
        " content digests; lists every problem found.",
    )
    chk.add_argument("--json", action="store_true", help="print JSON")
    chk.set_defaults(func=_cmd_check)

    bak = sub.add_parser(
        "backup",
        parents=[common],
        help="a compacted, consistent copy of the store (safe while a learner writes)",
    )
    bak.add_argument("dest", type=Path, help="new or empty directory for the copy")
    bak.add_argument("--json", action="store_true", help="print JSON")
    bak.set_defaults(func=_cmd_backup)

    exp = sub.add_parser(
        "export",
        parents=[common],
        help="export traces, links and meta-memory as JSON lines",
    )
    exp.add_argument(
        "--jsonl",
        action="store_true",
        help="JSON lines (the only format; accepted for clarity)",
    )
    exp.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    exp.add_argument("--events", action="store_true", help="also export the audit log")
    exp.set_defaults(func=_cmd_export)

    imp = sub.add_parser(
        "import",
        parents=[common],
        help="import an export into a new (empty) store",
    )
    imp.add_argument("input", help="the export file ('-' for stdin)")
    imp.add_argument("--json", action="store_true", help="print JSON")
    imp.set_defaults(func=_cmd_import)
