"""``learn``, ``eavesdrop``, ``budget`` and ``focus``: running and watching the learner."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path

import msgspec

from sentient_core.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_RESOURCES,
    JSON,
    open_store,
    positive_int,
    text,
)
from sentient_core.cli.config_cmds import add_config_argument, data_dir_of, load_config

__all__ = ["register"]


def _learn_flags(args: argparse.Namespace) -> dict:
    """The settings the user gave as flags (they beat env, file and defaults)."""
    flags = {}
    for key, value, flag in (
        ("learner.iterations", args.iterations, "--iterations"),
        ("learner.interval_s", args.interval, "--interval"),
        ("chaperone.llm_url", args.llm, "--llm"),
        ("chaperone.model", args.model, "--model"),
        ("chaperone.corpus_dirs", tuple(args.corpus) if args.corpus else None, "--corpus"),
    ):
        if value is not None:
            flags[key] = (value, flag)
    return flags


def _cmd_learn(args: argparse.Namespace) -> int:
    from sentient_core.config import log_unsafe
    from sentient_core.control import (
        ControlServer,
        Foreground,
        LearnerBusyError,
        check_free,
        handler_for,
    )
    from sentient_core.core import Core
    from sentient_core.learning.learner import MAX_SESSION_ITERATIONS
    from sentient_core.learning.session import build_learner
    from sentient_core.liveview import render

    for folder in args.corpus or ():
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
    if args.iterations is not None and args.iterations > MAX_SESSION_ITERATIONS:
        print(
            f"error: --iterations {args.iterations}: a session runs at most"
            f" {MAX_SESSION_ITERATIONS} iterations; start another session for more",
            file=sys.stderr,
        )
        return 2
    effective = load_config(args, _learn_flags(args))
    if effective is None:
        return 2
    chaperone = effective.settings.chaperone
    iterations = effective.settings.learner.iterations
    data_dir = data_dir_of(args)
    data_dir.mkdir(parents=True, exist_ok=True)
    session = time.strftime("s%Y%m%d-%H%M%S", time.gmtime())
    target: list = []

    def handle(op: str):
        from sentient_core.control import ControlReply

        if not target:
            return ControlReply(ok=op == "ping", state="starting", message="starting up")
        return target[0](op)

    try:
        check_free(data_dir)  # before the store is opened: a second learner writes nothing
    except LearnerBusyError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    with Core(data_dir) as core, contextlib.ExitStack() as stack:
        try:
            control = ControlServer(data_dir, handle, mode="learn")
        except LearnerBusyError as err:  # lost a race with another learner starting
            print(f"error: {err}", file=sys.stderr)
            return 2
        stack.enter_context(control)
        settings = effective.learner_settings(core.data_dir, session)
        if args.no_metamemory:
            settings = msgspec.structs.replace(settings, metamemory=False)
        if args.judge_mode is not None:
            judge = msgspec.structs.replace(settings.judge, mode=args.judge_mode)
            settings = msgspec.structs.replace(settings, judge=judge)
        if not args.json:
            print(f"data dir: {core.data_dir}  (memory: {core.memory.count} traces)", flush=True)
            if effective.path:
                print(f"settings: {effective.path}", flush=True)
            print(
                "chaperone: "
                + (
                    f"LLM at {chaperone.llm_url}"
                    if chaperone.llm_url
                    else "embedded offline corpus (no LLM, no network)"
                )
                + (
                    f" + corpus {', '.join(chaperone.corpus_dirs)}" if chaperone.corpus_dirs else ""
                ),
                flush=True,
            )
        learner = build_learner(core, settings)
        for line in log_unsafe(effective, learner.events, session):
            print(f"warning: unsafe setting {line}", file=sys.stderr, flush=True)
        target.append(handler_for(Foreground(learner, str(core.data_dir))))

        def show(event) -> None:
            if args.json:
                print(JSON.encode(event).decode(), flush=True)
                return
            line = render(event)
            if line is not None:
                print(line, flush=True)

        learner.events.subscribe(show)
        endings: dict[str, str] = {}  # a user's question -> how it ended (the summary says)
        learner.events.subscribe(lambda e: _note_ending(e, endings))
        for q in args.ask or ():
            learner.ask(q)
        stats, interrupted = _run_interruptibly(learner, iterations)
        if interrupted and not stats.stopped_by:  # Ctrl-C during the last iteration
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
            _print_endings(args.ask or (), endings)
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
    return EXIT_INTERRUPTED if interrupted else 0


def _note_ending(event, endings: dict[str, str]) -> None:
    """Keep how each user question ended (its closing event; a re-opening clears it)."""
    from sentient_core.events import QuestionClosedEvent, QuestionEvent
    from sentient_core.learning.questions import normalise_question

    if isinstance(event, QuestionClosedEvent):
        how = event.outcome.replace("_", " ")
        if event.outcome == "not_found":
            how += f" after {event.attempts} attempt(s): {event.reason}"
        else:
            how += f" (trace {event.trace_id}{' from ' + event.source if event.source else ''})"
        endings[normalise_question(event.question)] = how
    elif isinstance(event, QuestionEvent) and event.status == "reopened":
        endings.pop(normalise_question(event.question), None)


def _print_endings(asked, endings: dict[str, str]) -> None:
    """One line per question the user asked with ``--ask``: how it ended, or still open."""
    from sentient_core.learning.questions import normalise_question

    for q in asked:
        how = endings.get(normalise_question(q), "still open (not asked yet, or in flight)")
        print(f"your question {' '.join(q.split())!r}: {how}")


def _run_interruptibly(learner, iterations: int):
    """Run the loop in a worker thread; the first Ctrl-C stops it after the current step.

    The loop runs in a thread so that SIGINT lands in this (main) thread, which
    only waits: a KeyboardInterrupt raised inside a step could leave it half done,
    and a signal handler cannot safely wake the loop's wait between iterations
    (setting an Event takes a lock the interrupted code may hold). A second
    Ctrl-C while the step finishes ends the process at once; committed
    transactions stay (LMDB is crash-safe), the one in flight is dropped.
    Returns the session's stats and whether Ctrl-C was pressed.
    """
    outcome: list = []

    def body() -> None:
        try:
            # Background semantics: the control channel may pause, resume or stop it
            # (`sentient learner pause` from another terminal).
            outcome.append(learner.run(iterations, background=True))
        except BaseException as err:  # handed to the main thread, re-raised there
            outcome.append(err)

    def wait() -> None:
        # Polling with sleep, not Thread.join: a KeyboardInterrupt inside join() marks
        # the thread finished while it still runs (Python 3.11), and sleep holds no lock.
        while not outcome:
            time.sleep(0.1)

    threading.Thread(target=body, name="sentient-learn", daemon=True).start()
    interrupted = False
    try:
        wait()
    except KeyboardInterrupt:
        interrupted = True
        try:
            print(
                "\ninterrupt: stopping after the current step (Ctrl-C again to abort now)",
                file=sys.stderr,
                flush=True,
            )
            learner.stop(timeout=0, reason="interrupted")
            wait()
        except KeyboardInterrupt:
            print("aborted", file=sys.stderr, flush=True)
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            os._exit(EXIT_INTERRUPTED)
    (result,) = outcome
    if isinstance(result, BaseException):
        raise result
    return result, interrupted


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


_FOCUS_VERBS = ("list", "add", "close", "done")


def _cmd_focus(args: argparse.Namespace) -> int:
    from sentient_core.autonomy.drives import Pursuit
    from sentient_core.errors import SentientError

    words = list(args.words or ())
    verb = words.pop(0) if words and words[0] in _FOCUS_VERBS else ("add" if words else "list")
    if verb == "list" and words:
        print(f"error: focus list takes no argument (got {' '.join(words)!r})", file=sys.stderr)
        return 2
    if verb in ("add", "close", "done") and len(words) != 1:
        what = "TOPIC" if verb == "add" else "ID"
        print(
            f"error: focus {verb} takes one {what} (quote a topic of several words)",
            file=sys.stderr,
        )
        return 2
    if verb != "add" and (args.question or args.until):
        print("error: --question and --until go with a declared topic", file=sys.stderr)
        return 2
    # Declaring a goal may create the store (before the first `learn`); listing never does.
    with open_store(args, readonly=verb == "list", create=verb == "add") as store:
        pursuit = Pursuit(store)
        try:
            if verb != "list":
                _focus_change(store, pursuit, verb, words[0], args)
        except SentientError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        goals = pursuit.goals()
        rows = _focus_rows(store, goals)
    if args.json:
        print(json.dumps(rows, indent=2))
    elif verb == "list":
        if not goals:
            print("no focus goals")
        for row in rows:
            _print_goal(row)
    return 0


def _focus_change(store, pursuit, verb: str, word: str, args: argparse.Namespace) -> None:
    """Declare, close or mark done one goal; the change is an event in the audit log."""
    from sentient_core.errors import NotFoundError
    from sentient_core.events import EventBus, FocusEvent

    if verb == "add":
        before = pursuit.find(word)
        goal = pursuit.add(word, questions=tuple(args.question or ()), condition=args.until or "")
        action = "declared" if before is None else "reopened" if before.status != "open" else ""
        criteria = goal.condition or "none: end it with `sentient focus done`"
        print(f"focus goal {goal.id}: {goal.topic}  (criteria: {criteria})")
    else:
        goal = pursuit.find(word) if not word[1:].isdigit() else None
        goal_id = goal.id if goal is not None else word
        try:
            before = pursuit.get(goal_id)
        except NotFoundError:
            raise NotFoundError(f"no focus goal {word!r} (see `sentient focus list`)") from None
        if before.status != "open":
            print(f"focus goal {before.id} is already {before.status}")
            return
        reason = args.reason or ("the user said it is done" if verb == "done" else "closed")
        if verb == "done":
            goal = pursuit.resolve(goal_id, by="done", reason=reason)
            action = "resolved"
        else:
            goal = pursuit.close(goal_id, reason=reason)
            action = "closed"
        print(f"focus goal {goal.id} {goal.status}: {goal.topic} ({reason})")
    if action:
        bus = EventBus(store)
        bus.emitter(session="cli").emit(
            FocusEvent, goal=goal.id, topic=goal.topic, action=action, reason=goal.reason
        )
        bus.flush()


def _focus_rows(store, goals) -> list[dict]:
    from sentient_core.learning.goals import goal_rows
    from sentient_core.learning.questions import QuestionBook

    return goal_rows(goals, QuestionBook(store))


def _print_goal(row: dict) -> None:
    print(f"{row['id']}  {row['status']:<8} progress {row['progress_count']}  {row['topic']}")
    print(f"      criteria: {row['condition'] or 'none (end it with `sentient focus done`)'}")
    for q in row["questions_state"]:
        print(f"      question [{q['status']}]: {q['question']}")
    if row["status"] != "open":
        ended = {"criteria": "its criteria held", "done": "focus done", "close": "focus close"}
        print(f"      ended by {ended.get(row['ended_by'], '?')}: {row['reason']}")
        for line in row["held"]:
            print(f"      held: {line}")
    else:
        for line in row["check"]["held"]:
            print(f"      holds: {line}")
        for line in row["check"]["missing"]:
            print(f"      missing: {line}")


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    learn = sub.add_parser(
        "learn",
        parents=[common],
        help="run the chaperone-gated learning loop (offline corpus by default)",
        description="curiosity → query → chaperone → ingest → integrate → judge → reflect, "
        "with a live view of each step and a summary. No LLM and no network unless --llm. "
        "Creates the store if there is none. Ctrl-C stops after the current step, prints the "
        "summary and exits 130 (a second Ctrl-C aborts at once).",
    )
    learn.add_argument(
        "--iterations",
        type=positive_int,
        default=None,
        help="iterations (default: learner.iterations, 10; max 100 per session)",
    )
    learn.add_argument(
        "--interval",
        type=float,
        default=None,
        help="seconds between iterations (default: learner.interval_s, 30)",
    )
    learn.add_argument(
        "--llm", metavar="URL", help="OpenAI-compatible base URL, e.g. http://localhost:1234/v1"
    )
    learn.add_argument("--model", help="model name for --llm")
    learn.add_argument(
        "--corpus",
        action="append",
        default=None,
        metavar="DIR",
        help="extra local corpus dir (repeatable)",
    )
    learn.add_argument(
        "--ask",
        action="append",
        type=text,
        metavar="QUESTION",
        help="a question to learn about (repeatable)",
    )
    learn.add_argument(
        "--json", action="store_true", help="one JSON event per line instead of the live view"
    )
    learn.add_argument(
        "--no-metamemory",
        action="store_true",
        help="do not learn from error (no surprise, credit, source weights, debts): an ablation",
    )
    learn.add_argument(
        "--judge-mode",
        choices=("live", "shadow"),
        help="shadow: the [judge] settings judge beside the default judge, logged only"
        " (default: the config's, live)",
    )
    add_config_argument(learn)
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

    foc = sub.add_parser(
        "focus",
        parents=[common],
        help="declare a focus goal (with resolution criteria); list|close|done",
        description="sentient focus TOPIC [--question Q ...] [--until COND] declares a goal"
        " (`focus add TOPIC` the same); `focus list` (or no argument) lists the goals with"
        " their criteria; `focus done ID` resolves one, `focus close ID` gives it up (ID or"
        " the topic). COND: 'questions answered', 'successes >= N', joined by 'and'; with"
        " questions the default is 'questions answered'. The learner resolves a goal when"
        " its criteria hold.",
    )
    foc.add_argument(
        "words",
        nargs="*",
        type=text,
        metavar="[list|add|close|done] TOPIC|ID",
        help="a topic to pursue, or a verb and its goal; omit to list goals",
    )
    foc.add_argument(
        "--question",
        action="append",
        type=text,
        metavar="Q",
        help="a question the goal is resolved by (repeatable)",
    )
    foc.add_argument("--until", metavar="COND", help="the condition that resolves it (see above)")
    foc.add_argument("--reason", help="why it is closed or done (kept with the goal)")
    foc.add_argument("--json", action="store_true", help="print JSON")
    foc.set_defaults(func=_cmd_focus)
