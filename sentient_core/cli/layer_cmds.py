"""``layers`` and ``notes``: memory's layers and the semantic notes condensation wrote."""

from __future__ import annotations

import argparse
import json

import msgspec

from sentient_core.cli.common import open_store

__all__ = ["register"]


def _cmd_layers(args: argparse.Namespace) -> int:
    from sentient_core.layers import layer_counts

    with open_store(args, readonly=True) as store:
        rows = layer_counts(store)
    if args.json:
        print(json.dumps(msgspec.to_builtins(rows), indent=2))
        return 0
    print(
        f"{'layer':<12}{'records':>9}{'live':>9}{'promotions':>12}{'demotions':>11}"
        f"{'retirements':>13}  states"
    )
    for r in rows:
        states = ", ".join(f"{k} {v}" for k, v in r.states.items())
        print(
            f"{r.layer:<12}{r.records:>9}{r.live:>9}{r.promotions:>12}{r.demotions:>11}"
            f"{r.retirements:>13}  {states}"
        )
    return 0


def _cmd_notes(args: argparse.Namespace) -> int:
    from sentient_core.layers import NOTES

    with open_store(args, readonly=True) as store:
        if not store.has_db("layers"):
            notes = []
        else:
            with store.read() as txn:
                notes = [n for n in NOTES.iter(txn) if args.all or n.state == "semantic"]
    if args.json:
        print(json.dumps([{**msgspec.to_builtins(n), "text": n.text} for n in notes], indent=2))
        return 0
    if not notes:
        print("no notes yet (they are written when independent sources agree about a subject)")
    for n in notes:
        print(f"note {n.id} [{n.state}] {n.subject!r}: cites traces {list(n.cites)}")
        for s in n.sentences:
            print(f"    {' '.join(s.text.split())[:200]}  ({s.source} {s.start}:{s.end})")
        if n.state == "retired":
            print(f"    retired: {n.retired_reason} (debt {n.debt})")
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add ``layers`` and ``notes``."""
    ly = sub.add_parser(
        "layers",
        parents=[common],
        help="memory's layers: records, promotions, demotions and retirements per layer",
    )
    ly.add_argument("--json", action="store_true", help="print JSON")
    ly.set_defaults(func=_cmd_layers)

    nt = sub.add_parser(
        "notes", parents=[common], help="semantic notes: what independent sources agree on"
    )
    nt.add_argument("--all", action="store_true", help="retired notes too")
    nt.add_argument("--json", action="store_true", help="print JSON")
    nt.set_defaults(func=_cmd_notes)
