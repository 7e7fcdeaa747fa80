"""``learner status|pause|resume|stop``: steer a learner running in another process."""

from __future__ import annotations

import argparse
import json
import sys

from sentient_core.cli.config_cmds import data_dir_of

__all__ = ["register"]

EXIT_NO_LEARNER = 1


def _print_status(status: dict) -> None:
    st = status["stats"]
    act = status["activity"]
    spend = status["budget"]["today"]
    print(
        f"learner ({status['mode']}, pid {status['pid']}) on {status['data_dir']}: {status['state']}"
    )
    print(
        f"  session {status['session']}: iteration {status['iteration']}"
        f" of {status['max_iterations']}, every {status['interval_s']:g} s"
    )
    print(
        f"  {st['iterations']} iteration(s) ({st['skipped']} skipped), {st['queries']} quer(ies),"
        f" {st['ingested']} chunk(s) ingested, {st['concepts']} concept(s) learned"
    )
    outs = ", ".join(f"{k}={v}" for k, v in sorted(st["outcomes"].items())) or "none"
    print(f"  judged: {outs}")
    print(
        f"  memory {status['memory']['traces']} traces; coherence"
        f" {status['observer']['coherence']:.3f}; budget today {spend['tokens']} tokens,"
        f" {spend['tool_calls']} tool call(s)"
    )
    asked = status.get("user_questions") or {}
    if any(asked.values()):
        print(
            "  your questions: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in asked.items())
        )
    goals = status.get("focus") or {}
    if any(goals.values()):
        print("  focus goals: " + ", ".join(f"{k} {v}" for k, v in goals.items()))
    if act["line"]:
        print(f"  now: {act['line']}")


def _cmd_learner(args: argparse.Namespace) -> int:
    from sentient_core.control import ControlError, NoLearnerError, request

    data_dir = data_dir_of(args)
    try:
        reply = request(data_dir, args.verb, timeout=args.timeout)
    except NoLearnerError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_NO_LEARNER
    except ControlError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {
                    "ok": reply.ok,
                    "state": reply.state,
                    "message": reply.message,
                    "status": reply.status,
                },
                indent=2,
            )
        )
    elif args.verb == "status" and reply.status is not None:
        _print_status(reply.status)
    elif args.verb == "login" and reply.ok:
        print(reply.message)  # the URL alone, for scripts and `xdg-open "$(…)"`
    else:
        print(f"{args.verb}: {reply.message} (state: {reply.state})")
    return 0 if reply.ok else 1


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    p = sub.add_parser(
        "learner",
        parents=[common],
        help="status|pause|resume|stop of a learner running elsewhere (serve or learn);"
        " login: a new one-time panel URL from serve",
        description="Talk to the learner that `serve` or `learn` runs on the data directory,"
        " through its control socket (DATA_DIR/control.sock). Exit 0 when the verb was done;"
        " 1 when no learner runs there or it had nothing to do (already paused, not running);"
        " 2 when the learner did not answer. `login` asks a running `serve` for a new"
        " one-time panel URL (only this user can: the socket is 0600).",
    )
    p.add_argument("verb", choices=("status", "pause", "resume", "stop", "login"))
    p.add_argument("--json", action="store_true", help="print the reply as JSON")
    p.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for an answer (default 30)"
    )
    p.set_defaults(func=_cmd_learner)
