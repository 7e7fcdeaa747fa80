"""``learn``, ``eavesdrop``, ``budget`` and ``focus``: running and watching the learner."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import msgspec

from sentient_core.cli.common import EXIT_RESOURCES, JSON, open_store, positive_int

__all__ = ["register"]


def _cmd_learn(args: argparse.Namespace) -> int:
    from sentient_core.core import Core
    from sentient_core.learning.learner import MAX_SESSION_ITERATIONS, LearnerConfig
    from sentient_core.learning.llm import LLMConfig
    from sentient_core.learning.session import LearnerSettings, build_learner
    from sentient_core.liveview import render

    for folder in args.corpus:
        if not Path(folder).is_dir():
            print(f"error: --corpus {folder}: not a directory", file=sys.stderr)
            return 2
    if args.llm and not args.llm.startswith(("http://", "https://")):
        print(
            f"error: --llm {args.llm!r}: expected an http(s) base URL such as"
            " http://localhost:1234/v1",
            file=sys.stderr,
        )
        return 2
    if args.iterations > MAX_SESSION_ITERATIONS:
        print(
            f"error: --iterations {args.iterations}: a session runs at most"
            f" {MAX_SESSION_ITERATIONS} iterations; start another session for more",
            file=sys.stderr,
        )
        return 2
    llm = None
    if args.llm:
        llm = LLMConfig(base_url=args.llm, **({"model": args.model} if args.model else {}))
    settings = LearnerSettings(
        learner=LearnerConfig(
            interval_s=args.interval,
            max_iterations=max(args.iterations, 1),
            session=time.strftime("s%Y%m%d-%H%M%S", time.gmtime()),
        ),
        llm=llm,
        corpus_dirs=tuple(args.corpus),
    )
    with Core(args.data_dir) as core:
        if not args.json:
            print(f"data dir: {core.data_dir}  (memory: {core.memory.count} traces)", flush=True)
            print(
                "chaperone: "
                + (
                    f"LLM at {args.llm}"
                    if args.llm
                    else "embedded offline corpus (no LLM, no network)"
                )
                + (f" + corpus {', '.join(args.corpus)}" if args.corpus else ""),
                flush=True,
            )
        learner = build_learner(core, settings)

        def show(event) -> None:
            if args.json:
                print(JSON.encode(event).decode(), flush=True)
                return
            line = render(event)
            if line is not None:
                print(line, flush=True)

        learner.events.subscribe(show)
        for q in args.ask or ():
            learner.ask(q)
        try:
            stats = learner.run(args.iterations)
        except KeyboardInterrupt:
            learner.stop()
            stats = learner.stats
            stats.stopped_by = "interrupted"
        if not args.json:
            print()
            print(
                f"summary: {stats.iterations} iteration(s) ({stats.skipped} skipped), "
                f"{stats.queries} quer(ies), {stats.ingested} chunk(s) ingested, "
                f"{stats.concepts} concept(s) learned, {stats.links} link(s), "
                f"{stats.refused} refused, {stats.failed} failed"
            )
            outs = ", ".join(f"{k}={v}" for k, v in sorted(stats.outcomes.items())) or "none"
            reqs = ", ".join(f"{k}={v}" for k, v in sorted(stats.requests.items())) or "none"
            print(f"judged: {outs}; requests: {reqs}")
            llm = learner.chaperone.llm
            if llm is not None:
                lat = llm.latency()
                est = f", {stats.tokens_estimated} estimated" if stats.tokens_estimated else ""
                print(
                    f"model: {stats.tokens} token(s) this session (answers, summaries and"
                    f" judge calls{est}); {lat['n']} repl(ies), latency p50 {lat['p50']:.1f} s,"
                    f" p90 {lat['p90']:.1f} s, max {lat['max']:.1f} s"
                )
            spend = learner.budget.today()
            print(
                f"budget today: {spend.tokens} tokens, {spend.tool_calls} tool call(s); "
                f"memory now {core.memory.count} traces; stopped by: {stats.stopped_by or 'done'}"
            )
            if stats.stopped_by.startswith("budget:") and stats.stopped_by != "budget:kill_switch":
                cap = stats.stopped_by.split(":", 1)[1]
                print(
                    f"the {cap} cap is spent for this UTC day: wait for tomorrow (UTC) or raise "
                    f"SENTIENT_AUTONOMOUS_{cap.upper()} (0 = unlimited); see `sentient budget`"
                )
            elif stats.stopped_by == "budget:kill_switch":
                print("the kill switch is on (SENTIENT_AUTONOMOUS=0): nothing was done")
    if stats.stopped_by.startswith("store:"):
        print(
            f"error: {stats.error}; the learner stopped after {stats.iterations} iteration(s):"
            " what it learned before was committed, nothing of the failed write",
            file=sys.stderr,
        )
        return EXIT_RESOURCES
    return 0


def _cmd_eavesdrop(args: argparse.Namespace) -> int:
    from sentient_core.events import SessionEvent, follow, read_events
    from sentient_core.liveview import render

    with open_store(args, readonly=True) as store:
        existing = read_events(store)
        start = existing[-args.last - 1][0] if args.last < len(existing) else -1
        if args.last == 0:
            start = existing[-1][0] if existing else -1
        deadline = None if args.seconds is None else time.monotonic() + args.seconds

        ended = False

        def stop() -> bool:
            return args.once or ended or (deadline is not None and time.monotonic() >= deadline)

        try:
            for _seq, event in follow(store, after=start, stop=stop, poll=args.poll):
                if args.until_end and isinstance(event, SessionEvent) and event.state == "ended":
                    ended = True
                if args.json:
                    print(JSON.encode(event).decode(), flush=True)
                else:
                    line = render(event, with_time=True)
                    if line is not None:
                        print(line, flush=True)
        except KeyboardInterrupt:
            pass
    return 0


def _cmd_budget(args: argparse.Namespace) -> int:
    from sentient_core.autonomy.budget import Budget

    with open_store(args, readonly=True) as store:
        report = Budget(store).report()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    today, caps, remaining = report["today"], report["caps"], report["remaining"]
    state = "ON" if report["enabled"] else "OFF (kill switch SENTIENT_AUTONOMOUS=0)"
    print(f"UTC day {today['day']}; autonomy {state}")
    print(f"  {'cap':<22} {'spent':>8}   {'limit':<10} remaining")
    spent_now = {
        "daily_tokens": today["tokens"],
        "daily_tool_calls": today["tool_calls"],
    }
    for name in (
        "daily_tokens",
        "daily_tool_calls",
        "per_tick_tokens",
        "per_tick_initiatives",
        "per_initiative_tokens",
    ):
        cap = caps[name]
        left = remaining.get(name)
        spent = spent_now.get(name, "")
        print(
            f"  {name:<22} {spent!s:>8}   {cap or 'unlimited'!s:<10} {'∞' if left is None else left}"
        )
    print(
        f"  initiatives today: {today.get('initiatives_done', 0)} done, "
        f"{today.get('initiatives_failed', 0)} failed, {today.get('initiatives_skipped', 0)} skipped"
    )
    return 0


def _cmd_focus(args: argparse.Namespace) -> int:
    from sentient_core.autonomy.drives import Pursuit

    with open_store(args, readonly=args.topic is None) as store:
        pursuit = Pursuit(store)
        if args.topic is not None:
            goal = pursuit.add(args.topic)
            print(f"focus goal {goal.id}: {goal.topic}")
        goals = pursuit.goals()
    if args.json:
        print(json.dumps([msgspec.to_builtins(g) for g in goals], indent=2))
    elif args.topic is None:
        if not goals:
            print("no focus goals")
        for g in goals:
            print(f"{g.id}  {g.status:<8} progress {g.progress_count}  {g.topic}")
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    learn = sub.add_parser(
        "learn",
        parents=[common],
        help="run the chaperone-gated learning loop (offline corpus by default)",
        description="curiosity → query → chaperone → ingest → integrate → judge → reflect, "
        "with a live view of each step and a summary. No LLM and no network unless --llm.",
    )
    learn.add_argument(
        "--iterations", type=positive_int, default=10, help="iterations (max 100 per session)"
    )
    learn.add_argument(
        "--interval", type=float, default=30.0, help="seconds between iterations (default 30)"
    )
    learn.add_argument(
        "--llm", metavar="URL", help="OpenAI-compatible base URL, e.g. http://localhost:1234/v1"
    )
    learn.add_argument("--model", help="model name for --llm")
    learn.add_argument(
        "--corpus",
        action="append",
        default=[],
        metavar="DIR",
        help="extra local corpus dir (repeatable)",
    )
    learn.add_argument(
        "--ask", action="append", metavar="QUESTION", help="a question to learn about (repeatable)"
    )
    learn.add_argument(
        "--json", action="store_true", help="one JSON event per line instead of the live view"
    )
    learn.set_defaults(func=_cmd_learn)

    eav = sub.add_parser(
        "eavesdrop", parents=[common], help="follow a learner (in another process) live"
    )
    eav.add_argument("--json", action="store_true", help="one JSON object per line")
    eav.add_argument(
        "--last", type=int, default=20, help="show the last N events first (default 20)"
    )
    eav.add_argument("--once", action="store_true", help="print what is there and exit")
    eav.add_argument("--seconds", type=float, default=None, help="stop following after this long")
    eav.add_argument("--poll", type=float, default=0.2, help="poll interval in seconds")
    eav.add_argument("--until-end", action="store_true", help="exit when a learner session ends")
    eav.set_defaults(func=_cmd_eavesdrop)

    bud = sub.add_parser(
        "budget", parents=[common], help="today's autonomous spend against the caps"
    )
    bud.add_argument("--json", action="store_true", help="print JSON")
    bud.set_defaults(func=_cmd_budget)

    foc = sub.add_parser("focus", parents=[common], help="declare a focus goal (or list them)")
    foc.add_argument("topic", nargs="?", help="the topic to pursue; omit to list goals")
    foc.add_argument("--json", action="store_true", help="print JSON")
    foc.set_defaults(func=_cmd_focus)
