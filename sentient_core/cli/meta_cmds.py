"""Learning from error: ``feedback``, ``sources``, ``debts``, ``wisdom``, ``scorer``, ``status``.

Every figure is read from the store (what meta-memory recorded), never from a
process's counters, so they are the same in any process and after a restart.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

import msgspec

from sentient_core.cli.common import open_core, open_store

__all__ = ["register", "store_counts"]


def _dump(obj: Any) -> str:
    return json.dumps(msgspec.to_builtins(obj), indent=2, ensure_ascii=False)


def _cmd_feedback(args: argparse.Namespace) -> int:
    from sentient_core.errors import NotFoundError

    with open_core(args) as core:
        try:
            out = core.feedback(args.trace_id, right=args.right, note=args.note or "")
        except NotFoundError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"trace {out['trace']} marked {out['verdict']}: strength {out['strength_before']:.3f}"
            f" → {out['strength_after']:.3f}, credit {out['credit']:+.3f}"
            + (f", surprise event {out['surprise_event']}" if out["surprise_event"] >= 0 else "")
            + " (strength moves only after ≥ 2 consistent signals)"
        )
    return 0


def _cmd_sources(args: argparse.Namespace) -> int:
    from sentient_core.metamemory.sources import WEIGHTS

    with open_store(args, readonly=True) as store, store.read() as txn:
        rows = sorted(WEIGHTS.iter(txn), key=lambda r: (r.domain, -r.weight, r.source))
    if args.domain:
        rows = [r for r in rows if r.domain == args.domain]
    if args.json:
        print(_dump(rows))
        return 0
    if not rows:
        print("no source weights yet (every source weighs 1.0 until a surprise names it)")
    for r in rows:
        print(
            f"{r.domain:<20} {r.weight:6.3f}  {r.source}  (punished {r.punished}, rewarded"
            f" {r.rewarded}, failures {r.failures}, corrections {r.corrections})"
        )
    return 0


def _cmd_debts(args: argparse.Namespace) -> int:
    from sentient_core.metamemory.debts import DEBTS, base_priority, evidence_support

    with open_store(args, readonly=True) as store, store.read() as txn:
        rows = list(DEBTS.iter(txn))
    if args.status:
        rows = [r for r in rows if r.status == args.status]
    if args.json:
        print(_dump(rows))
        return 0
    if not rows:
        print("no epistemic debts")
    import time

    now = time.time()
    for r in rows:
        support, _ = evidence_support(r)
        test = f"{r.test.kind}: {r.test.path or r.test.question}" if r.test else "none"
        print(
            f"debt {r.id} [{r.status}] {r.domain}: {' | '.join(r.hypotheses)}"
            f"\n    pattern: {r.pattern[:100]}\n    test: {test[:120]}"
            f"\n    evidence {len(r.evidence)} (counted support {support:.2f}), fragility"
            f" {r.fragility:.2f}, failed attempts {r.failed_attempts}, priority"
            f" {base_priority(r, now):.3f}"
        )
    return 0


def _cmd_wisdom(args: argparse.Namespace) -> int:
    from sentient_core.metamemory.wisdom import WISDOM, score

    with open_store(args, readonly=True) as store, store.read() as txn:
        rows = list(WISDOM.iter(txn))
    if args.json:
        print(_dump(rows))
        return 0
    if not rows:
        print("no wisdom records (clusters of surprise on one domain and action)")
    for r in rows:
        print(
            f"wisdom {r.id} [{r.state}] {r.domain} / {r.action}: {r.episode_count} episode(s),"
            f" {len(r.sessions)} session(s), score {score(r):.3f}, cites debts"
            f" {list(r.cited_debts)}"
        )
        for step in r.history:
            print(f"    {step.source} → {step.target}: {step.reason[:100]}")
    return 0


def _cmd_scorer(args: argparse.Namespace) -> int:
    from sentient_core.metamemory import ScorerModel, batches_of, replay
    from sentient_core.metamemory.scorer import SNAPSHOTS

    with open_store(args, readonly=True) as store:
        with store.read() as txn:
            snaps = list(SNAPSHOTS.iter(txn))
        model = ScorerModel.load(store)
    identical = None
    if snaps:
        identical = replay(snaps, batches_of(snaps)).weights.tobytes() == model.weights.tobytes()
    factors = dict(zip(model.names, (float(w) for w in model.weights), strict=True))
    out = {
        "model_version": model.version,
        "factors": factors,
        "snapshots": len(snaps),
        "outcomes": sum(s.outcome_count for s in snaps),
        "last_loss": snaps[-1].mean_loss if snaps else None,
        "replay_identical": identical,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"scorer model {out['model_version']}: {out['snapshots']} snapshot(s),"
        f" {out['outcomes']} judged outcome(s), last loss {out['last_loss']},"
        f" replay identical: {identical}"
    )
    for name, w in factors.items():
        print(f"    {name:<16} {w:+.4f}")
    return 0


def store_counts(store: Any) -> dict[str, Any]:
    """Meta-memory's counts in ``store``, by stage (surprise, credit, sources, debts,
    wisdom, scorer)."""
    from sentient_core.metamemory.credit import CREDITS, FLOORS
    from sentient_core.metamemory.debts import DEBTS
    from sentient_core.metamemory.scorer import SNAPSHOTS
    from sentient_core.metamemory.sources import WEIGHTS
    from sentient_core.metamemory.surprise import EVENTS
    from sentient_core.metamemory.wisdom import WISDOM

    with store.read() as txn:
        events = list(EVENTS.iter(txn))
        cred = list(CREDITS.iter(txn))
        floors = list(FLOORS.iter(txn))
        weights = list(WEIGHTS.iter(txn))
        dl = list(DEBTS.iter(txn))
        wl = list(WISDOM.iter(txn))
        snaps = list(SNAPSHOTS.iter(txn))
    transitions = Counter(f"{s.source}->{s.target}" for r in wl for s in r.history)
    return {
        "surprise": {
            "events": len(events),
            "by_cause": dict(Counter(e.cause for e in events)),
            # disagreement.model: a signal the configured model added (the detector had none)
            "by_rule": dict(Counter(e.basis.rule for e in events)),
        },
        "credit": {
            "traces": len(cred),
            "signals": sum(r.events for r in cred),
            "retired_at_floor": len(floors),
            "superseded": sum(1 for f in floors if f.superseded_by >= 0),
        },
        "sources": {
            "pairs": len(weights),
            "punished": sum(r.punished for r in weights),
            "rewarded": sum(r.rewarded for r in weights),
            "below_half": sum(1 for r in weights if r.weight < 0.5),
        },
        "debts": {
            "opened": len(dl),
            **Counter(d.status for d in dl),
            "reopened": sum(d.reopened for d in dl),
        },
        "wisdom": {"records": len(wl), **Counter(r.state for r in wl), **transitions},
        "scorer": {
            "snapshots": len(snaps),
            "outcomes": sum(s.outcome_count for s in snaps),
            "last_loss": snaps[-1].mean_loss if snaps else None,
        },
    }


def _questions_and_goals(store) -> tuple[dict[str, int], dict[str, int]]:
    """The user's questions by how they ended, and the focus goals by status."""
    from sentient_core.autonomy.drives import Pursuit
    from sentient_core.learning.questions import QuestionBook

    asked = {"open": 0, "answered": 0, "already_known": 0, "not_found": 0}
    for rec in QuestionBook(store).records():
        if rec.origin == "user":
            asked[rec.closed or "open"] += 1
    goals = {"open": 0, "resolved": 0, "closed": 0}
    for goal in Pursuit(store).goals():
        goals[goal.status] += 1
    return asked, goals


def _cmd_status(args: argparse.Namespace) -> int:
    from sentient_core.autonomy.funnel import describe, funnel, silent_gates
    from sentient_core.events import last_session_end
    from sentient_core.misses import MissLog

    with open_store(args, readonly=True) as store:
        with store.read() as txn:
            c = txn.counters()
        meta = store_counts(store)
        ended = last_session_end(store)
        misses = MissLog(store).summary()
        asked, goals = _questions_and_goals(store)
    stats = ended.stats if ended is not None else None
    last = None
    if ended is not None and stats is not None:
        # The last session's gates, in order: what reached, passed and stopped at each.
        last = {
            "session": ended.session,
            "gates": [msgspec.to_builtins(g) for g in funnel(stats)],
            "learned": stats.gates.get("learned", 0),
            "silent": [g.gate for g in silent_gates(stats)],
        }
    out = {
        "path": str(store.path),
        "traces": c.trace_count,
        "metamemory": meta,
        "misses": misses,
        "funnel": last,
        "user_questions": asked,
        "focus": goals,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{store.path}: {c.trace_count} traces")
    for stage, counts in meta.items():
        print(f"  {stage:<9} " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(
        f"  misses    {misses['misses']} recall(s) found nothing relevant, on"
        f" {misses['subjects']} subject(s): {misses['open']} open, {misses['asked']} asked,"
        f" {misses['answered']} answered"
    )
    if any(asked.values()):
        print(
            "  your questions: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in asked.items())
        )
    if any(goals.values()):
        print("  focus goals: " + ", ".join(f"{k} {v}" for k, v in goals.items()))
    if stats is not None:
        for line in describe(stats):
            print(f"  last session {line}")
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    fb = sub.add_parser(
        "feedback",
        parents=[common],
        help="tell meta-memory a trace is wrong or right (credit, counts, a surprise event)",
    )
    fb.add_argument("trace_id", type=int, metavar="TRACE_ID")
    verdict = fb.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--wrong", action="store_true", help="the trace is wrong")
    verdict.add_argument("--right", action="store_true", help="the trace is right")
    fb.add_argument("--note", help="why (kept with the surprise event)")
    fb.add_argument("--json", action="store_true", help="print JSON")
    fb.set_defaults(func=_cmd_feedback)

    src = sub.add_parser("sources", parents=[common], help="source weights per (domain, source)")
    src.add_argument("--domain", help="only this domain")
    src.add_argument("--json", action="store_true", help="print JSON")
    src.set_defaults(func=_cmd_sources)

    dbt = sub.add_parser("debts", parents=[common], help="epistemic debts and their evidence")
    dbt.add_argument("--status", choices=("open", "resolved", "deferred"))
    dbt.add_argument("--json", action="store_true", help="print JSON")
    dbt.set_defaults(func=_cmd_debts)

    wis = sub.add_parser("wisdom", parents=[common], help="wisdom records and their transitions")
    wis.add_argument("--json", action="store_true", help="print JSON")
    wis.set_defaults(func=_cmd_wisdom)

    sc = sub.add_parser(
        "scorer", parents=[common], help="the learned recall scorer: weights, snapshots, replay"
    )
    sc.add_argument("--json", action="store_true", help="print JSON")
    sc.set_defaults(func=_cmd_scorer)

    st = sub.add_parser(
        "status", parents=[common], help="the store's traces and meta-memory's counts by stage"
    )
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(func=_cmd_status)
