"""``evaluate``: the learning-efficacy benchmark over Q/A sets."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import msgspec

from sentient_core.cli.common import positive_int

__all__ = ["register"]


def _printed(args: argparse.Namespace, report: Any, text: Callable[[Any], str]) -> int:
    """Print ``report`` as JSON (``--json``) or as ``text`` gives it; exit code 0."""
    if args.json:
        print(json.dumps(msgspec.to_builtins(report), indent=2, ensure_ascii=False))
    else:
        print(text(report))
    return 0


def _cmd_field_gaps(args: argparse.Namespace) -> int:
    """``--scenario field-gaps``: the offline learner, field gaps on vs off (``--free-run N``
    iterations per arm, 40 by default; ``--corpus`` adds a folder)."""
    import tempfile
    from pathlib import Path

    from sentient_core.errors import ArgumentError
    from sentient_core.evaluation.field_ab import format_field_gaps, run_field_gaps

    try:
        with tempfile.TemporaryDirectory(prefix="sentient-field-") as tmp:
            report = run_field_gaps(
                args.free_run or 40,
                Path(tmp),
                corpus_dirs=(args.corpus,) if args.corpus else (),
                progress=lambda line: None if args.json else print(line, file=sys.stderr),
            )
    except ArgumentError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return _printed(args, report, format_field_gaps)


def _cmd_scenario(args: argparse.Namespace) -> int:
    """``--scenario NAME``: the Q/A set and corpus (bench/data/debian by default in a
    checkout), progress on stderr, the report as text or JSON."""
    import tempfile
    from pathlib import Path

    from sentient_core.errors import ArgumentError
    from sentient_core.evaluation.lying import format_scenario, run_lying_source
    from sentient_core.evaluation.moved_source import format_moved_source, run_moved_source
    from sentient_core.evaluation.qa import load_qa, sample

    data = Path(__file__).resolve().parents[2] / "bench" / "data" / "debian"
    qa = args.qa or str(data / "qa.json")
    corpus = args.corpus or str(data / "corpus")
    if not Path(qa).is_file() or not Path(corpus).is_dir():
        print(
            f"error: the {args.scenario} scenario needs QA.json and --corpus DIR (from a"
            " checkout they default to bench/data/debian)",
            file=sys.stderr,
        )
        return 2

    def progress(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    text: Callable[[Any], str]
    try:
        if args.scenario == "wisdom":
            from sentient_core.evaluation.wisdom_scenario import (
                format_wisdom_scenario,
                run_wisdom_scenario,
            )

            report: Any = run_wisdom_scenario(
                qa, corpus, iterations=args.iterations_per_question, progress=progress
            )
            text = format_wisdom_scenario
        elif args.scenario == "lying-source":
            report = run_lying_source(
                qa,
                corpus,
                lying_file=args.lying_file,
                iterations=args.iterations_per_question,
                sample_size=args.sample,
                progress=progress,
            )
            text = format_scenario
        else:
            items = sample(load_qa(qa), args.sample, args.seed)
            with tempfile.TemporaryDirectory(prefix="sentient-moved-") as tmp:
                report = run_moved_source(
                    items,
                    corpus,
                    args.k,
                    Path(tmp),
                    iterations_per_question=args.iterations_per_question,
                    progress=progress,
                    qa_file=qa,
                )
            text = format_moved_source
    except ArgumentError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return _printed(args, report, text)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from sentient_core.errors import ArgumentError
    from sentient_core.evaluation import evaluate, format_report

    if args.scenario == "field-gaps":
        return _cmd_field_gaps(args)
    if args.scenario is not None:
        return _cmd_scenario(args)

    if args.qa is None and not args.free_run:
        print("error: give QA.json with --corpus DIR, or --free-run N (or both)", file=sys.stderr)
        return 2
    if args.qa is not None and args.corpus is None:
        print(
            "error: QA.json needs --corpus DIR (the folder its answers come from)", file=sys.stderr
        )
        return 2

    def progress(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    if args.second_pass:
        return _cmd_second_pass(args, progress)
    try:
        report = evaluate(
            args.qa,
            args.corpus,
            mode=args.mode,
            k=args.k,
            iterations_per_question=args.iterations_per_question,
            sample_size=args.sample,
            seed=args.seed,
            free_run=args.free_run,
            free_corpus=(args.corpus,) if args.corpus else (),
            progress=progress,
            metamemory=not args.no_metamemory,
            judge=_judge_settings(args),
            commit_routes=args.commit_routes,
            condense=args.condense,
            recipes=args.recipes,
            spread=args.spread,
        )
    except ArgumentError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return _printed(args, report, format_report)


def _cmd_second_pass(args: argparse.Namespace, progress) -> int:
    import tempfile
    from pathlib import Path

    from sentient_core.errors import ArgumentError
    from sentient_core.evaluation.qa import load_qa, sample
    from sentient_core.evaluation.second_pass import format_second_pass, run_second_pass

    if args.qa is None:
        print("error: --second-pass needs QA.json with --corpus DIR", file=sys.stderr)
        return 2
    try:
        if not Path(args.corpus).is_dir():
            raise ArgumentError(f"corpus must be a directory, got {args.corpus!r}")
        items = sample(load_qa(args.qa), args.sample, args.seed)
        with tempfile.TemporaryDirectory(prefix="sentient-second-pass-") as tmp:
            report = run_second_pass(
                items,
                args.corpus,
                args.k,
                Path(tmp),
                iterations_per_question=args.iterations_per_question,
                commit_routes=args.commit_routes,
                metamemory=not args.no_metamemory,
                judge=_judge_settings(args),
                progress=progress,
                qa_file=args.qa,
            )
    except ArgumentError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return _printed(args, report, format_second_pass)


def _judge_settings(args: argparse.Namespace):
    """Learn mode's judge from ``--judge-mode``, ``--judge-relevant``, ``--judge-decisive``."""
    from sentient_core.autonomy.judge import JudgeSettings

    given = {
        key: value
        for key, value in (
            ("mode", args.judge_mode),
            ("relevant", args.judge_relevant),
            ("decisive", args.judge_decisive),
        )
        if value is not None
    }
    try:
        return msgspec.convert(given, JudgeSettings)
    except msgspec.ValidationError as err:
        from sentient_core.errors import ArgumentError

        raise ArgumentError(f"judge settings: {err}") from None


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    ev = sub.add_parser(
        "evaluate",
        help="learning-efficacy benchmark on your own Q/A set: ingest vs learn vs bm25s",
        description="Run each mode on a fresh temporary store and report answer@1/@k, judge "
        "precision, chunks/tool calls/iterations per answered question, duplicate stores, "
        "repeat-query rate and silent drops; --free-run N runs the default offline learner "
        "for N iterations and lists every success verdict.",
    )
    ev.add_argument("qa", nargs="?", metavar="QA.json", help='[{"q": ..., "answers": [...]}, ...]')
    ev.add_argument(
        "--corpus",
        metavar="DIR",
        help="the folder the answers come from (a free run explores it beside Python's docs)",
    )
    ev.add_argument(
        "--mode", choices=("ingest", "learn", "both"), default="both", help="default both"
    )
    ev.add_argument("-k", type=positive_int, default=5, help="passages recalled (default 5)")
    ev.add_argument(
        "--iterations-per-question",
        type=positive_int,
        default=3,
        help="learn mode: at most this many iterations per question (default 3)",
    )
    ev.add_argument(
        "--sample", type=positive_int, default=None, help="a seeded sample of N questions"
    )
    ev.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    ev.add_argument(
        "--free-run",
        type=int,
        default=0,
        metavar="N",
        help="also run the default offline learner N iterations (no questions) on a fresh store",
    )
    ev.add_argument(
        "--no-metamemory",
        action="store_true",
        help="learn mode without learning from error (the ablation)",
    )
    ev.add_argument(
        "--judge-mode",
        choices=("live", "shadow"),
        help="learn mode: shadow runs the judge of --judge-relevant/--judge-decisive beside"
        " the default one, logged only, and reports their agreement (default live)",
    )
    ev.add_argument(
        "--commit-routes",
        type=int,
        default=0,
        choices=range(5),
        metavar="N",
        help="learn mode: routes the task-commitment drive tries per question (0-4; default 0:"
        " off)",
    )
    ev.add_argument(
        "--condense",
        action="store_true",
        help="ingest and learn modes: condense the store into semantic notes at the end and"
        " report recall with notes in place (answer@k, characters per answered question)",
    )
    ev.add_argument(
        "--recipes",
        action="store_true",
        help="learn mode with recipes: tried first on a question of a kind answered before",
    )
    ev.add_argument(
        "--spread",
        type=int,
        default=0,
        choices=range(4),
        metavar="HOPS",
        help="ingest and learn modes: also report answer@k of recall spread HOPS link steps"
        " (1-3) from its hits, on the same store (reflection writes links: learn mode has them)",
    )
    ev.add_argument(
        "--second-pass",
        action="store_true",
        help="recipes: learn half of the Q/A set (recipes on), then the other half (same kinds)"
        " on two copies of that store, with recipes and without; reports queries per answered"
        " question and answer@k of both",
    )
    ev.add_argument("--judge-relevant", type=float, help="the judge's relevance gate (0.5)")
    ev.add_argument("--judge-decisive", type=float, help="the judge's decisive margin (0.3)")
    ev.add_argument(
        "--scenario",
        choices=("lying-source", "moved-source", "field-gaps", "wisdom"),
        default=None,
        help="lying-source: a loopback model lies about one domain; meta-memory on vs off."
        " moved-source: the files recipes rely on move between passes; recipes demoted,"
        " repaired, re-verified (QA.json and --corpus default to bench/data/debian in a"
        " checkout). field-gaps: the offline learner --free-run N iterations (40) with"
        " SMF-axis gaps mapped by the field vs by relatedness, same seed. wisdom: wisdom from two"
        " sessions with a lying model used in a later one (vs not), wrong wisdom demoted by its"
        " failed uses, a corrected changelog reopening a resolved debt",
    )
    ev.add_argument(
        "--lying-file",
        default="curl.changelog.txt",
        help="lying-source: the corpus file whose questions the model lies about",
    )
    ev.add_argument("--json", action="store_true", help="print JSON")
    ev.set_defaults(func=_cmd_evaluate)
