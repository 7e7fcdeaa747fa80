"""Recipes: ``recipes`` lists them, ``recipe show ID`` shows one with its histories.

Read from the store (what the learner recorded), never from a process's counters.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import msgspec

from sentient_core.cli.common import open_store

__all__ = ["register"]


def _dump(obj: Any) -> str:
    return json.dumps(msgspec.to_builtins(obj), indent=2, ensure_ascii=False)


def _procedure(r: Any) -> str:
    route = r.route or "as usual"
    return f"{r.request_type} on route {route!r}, source {r.source or '—'}"


def _cmd_recipes(args: argparse.Namespace) -> int:
    from sentient_core.recipes import records

    with open_store(args, readonly=True) as store, store.read() as txn:
        rows = [r for r in records(txn) if args.state is None or r.state == args.state]
    if args.json:
        print(_dump(rows))
        return 0
    if not rows:
        print("no recipes (one is born of each judged success on a question of a new kind)")
    for r in rows:
        print(
            f"recipe {r.id} [{r.state}] {r.kind!r} in {r.domain}: {_procedure(r)};"
            f" reuses verified {r.support}, failed {r.failures}, inconclusive {r.inconclusive}"
        )
    return 0


def _cmd_recipe_show(args: argparse.Namespace) -> int:
    from sentient_core.recipes import RECIPES

    with open_store(args, readonly=True) as store, store.read() as txn:
        r = RECIPES.get(txn, args.id) if store.has_db(RECIPES.db) else None
    if r is None:
        print(f"error: no recipe {args.id}", file=sys.stderr)
        return 2
    if args.json:
        print(_dump(r))
        return 0
    print(f"recipe {r.id} [{r.state}]")
    print(f"  kind: {r.kind}")
    print(f"  domain: {r.domain}")
    print(f"  procedure: {_procedure(r)}; query shape {r.query_shape!r}")
    print(f"  born of request {r.born_of}")
    print(
        f"  tried first {r.trials} time(s): verified {r.support}, failed {r.failures},"
        f" inconclusive {r.inconclusive}"
    )
    print("  transitions:")
    for step in r.history:
        ev = f" [{', '.join(step.evidence)}]" if step.evidence else ""
        print(f"    {step.source} → {step.target}: {step.reason[:160]}{ev}")
    print(f"  revisions: {len(r.revisions) or 'none'}")
    for n, rev in enumerate(r.revisions, 1):
        print(
            f"    {n}. {rev.request_type} on route {rev.route or 'as usual'!r}, source"
            f" {rev.source or '—'}, query shape {rev.query_shape!r} — {rev.reason[:120]}"
        )
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    rs = sub.add_parser(
        "recipes",
        parents=[common],
        help="recipes: how each kind of question was answered, and how reuses were judged",
    )
    rs.add_argument("--state", choices=("draft", "confirmed", "advisory", "retired"))
    rs.add_argument("--json", action="store_true", help="print JSON")
    rs.set_defaults(func=_cmd_recipes)

    one = sub.add_parser(
        "recipe", parents=[common], help="one recipe with its transition and revision history"
    )
    one.add_argument("action", choices=("show",), help="show: the recipe with its histories")
    one.add_argument("id", type=int, metavar="ID")
    one.add_argument("--json", action="store_true", help="print JSON")
    one.set_defaults(func=_cmd_recipe_show)
