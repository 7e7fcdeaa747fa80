"""Command-line interface: argument parsing and printing only.

Entry points: ``python cli.py ...`` from a checkout, or the ``sentient``
console command installed with the package. Both call :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec

from sentient_core import __version__

__all__ = ["build_parser", "main"]

_JSON = msgspec.json.Encoder()


def _cmd_bench(args: argparse.Namespace) -> int:
    from kernels.warmup import warmup
    from sentient_core.benchmarks import runner

    def progress(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    if not args.json:
        print("compiling kernels…", file=sys.stderr, flush=True)
    warm = warmup()
    if not args.json:
        total = sum(w.seconds for w in warm)
        print(f"kernels ready in {total:.2f} s", file=sys.stderr, flush=True)
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


def _open_core(args: argparse.Namespace, *, readonly: bool = False):
    from sentient_core.core import Core

    return Core(args.data_dir, readonly=readonly)


def _open_store(args: argparse.Namespace, *, readonly: bool):
    """The store alone (eavesdrop, budget and focus need no memory mirror or observer)."""
    from sentient_core.core import CODE_DIM
    from sentient_core.store import Store, default_data_dir

    path = args.data_dir if args.data_dir is not None else default_data_dir()
    return Store.open(path, code_dim=CODE_DIM, readonly=readonly, create=not readonly)


def _fmt_mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def _ingest_progress(bar):
    def show(p) -> None:
        frac = (
            p.bytes_done / p.bytes_total if p.bytes_total else p.files_done / max(p.files_total, 1)
        )
        rate = p.chunks / p.elapsed if p.elapsed > 0 else 0.0
        name = Path(p.current).name
        bar.update(
            frac,
            f"{p.files_done}/{p.files_total} files, {p.chunks} chunks, {rate:,.0f} chunks/s  {name}",
            force=p.files_done == p.files_total,
        )

    return show


def _cmd_ingest(args: argparse.Namespace) -> int:
    from sentient_core.integrate import Integrator
    from sentient_core.progress import ProgressLine

    with _open_core(args) as core:
        integ = Integrator(core.memory, core.observer, batch=args.batch)
        bar = ProgressLine()
        summary = integ.ingest(args.paths, progress=None if args.json else _ingest_progress(bar))
        bar.done()
    if args.json:
        print(json.dumps(summary.as_dict(), indent=2))
    else:
        for skip in summary.skipped:
            print(f"skipped {skip.path}: {skip.reason}", file=sys.stderr)
        print(
            f"ingested {summary.files} file(s), {summary.chunks} chunks, {_fmt_mb(summary.bytes)}"
            f" in {summary.seconds:.2f} s ({summary.chunks_per_s:,.0f} chunks/s,"
            f" {summary.mb_per_s:.2f} MB/s); {len(summary.skipped)} skipped"
        )
    return 1 if summary.files == 0 and summary.skipped else 0


def _snippet(text: str, width: int = 160) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


def _cmd_recall(args: argparse.Namespace) -> int:
    with _open_core(args, readonly=args.no_touch) as core:
        hits = core.memory.recall(
            args.query, k=args.k, threshold=args.threshold, touch=not args.no_touch
        )
    rows = [
        {
            "rank": i + 1,
            "id": h.record.id,
            "score": h.score,
            "source": h.record.source,
            "topic": h.record.topic,
            "snippet": _snippet(h.record.text),
        }
        for i, h in enumerate(hits)
    ]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no memory matches (nothing above the threshold)")
        return 0
    for r in rows:
        print(f"{r['rank']:>3}. {r['score']:.3f}  #{r['id']}  {r['source']}")
        print(f"     {r['snippet']}")
    return 0


def _cmd_profile(args: argparse.Namespace) -> int:
    import tempfile

    from sentient_core.core import Core
    from sentient_core.corpus import generate_corpus
    from sentient_core.integrate import STAGES, Integrator
    from sentient_core.progress import ProgressLine

    with tempfile.TemporaryDirectory(prefix="sentient-profile-") as tmp:
        paths = args.paths
        corpus = "given paths"
        if not paths:
            size = int(args.size_mb * 1e6)
            if not args.json:
                print(f"generating a {args.size_mb:g} MB corpus…", file=sys.stderr, flush=True)
            paths = [str(p) for p in generate_corpus(Path(tmp) / "corpus", size, seed=args.seed)]
            corpus = f"generated {args.size_mb:g} MB (txt/md/html/json, seed {args.seed})"
        data_dir = args.data_dir if args.data_dir is not None else Path(tmp) / "store"
        with Core(data_dir) as core:
            integ = Integrator(core.memory, core.observer, batch=args.batch)
            bar = ProgressLine()
            summary = integ.ingest(paths, progress=None if args.json else _ingest_progress(bar))
            bar.done()
    st = summary.stages
    timed = st.total()
    other = max(summary.seconds - timed, 0.0)
    if args.json:
        out = summary.as_dict()
        out["corpus"] = corpus
        out["untimed_seconds"] = other
        print(json.dumps(out, indent=2))
        return 0
    print(f"corpus: {corpus}; {summary.files} files, {len(summary.skipped)} skipped")
    print(f"{'stage':<10} {'seconds':>9} {'share':>7} {'µs/chunk':>9}")
    for name in (*STAGES, "other"):
        sec = other if name == "other" else getattr(st, name)
        share = sec / summary.seconds * 100 if summary.seconds else 0.0
        per = sec / summary.chunks * 1e6 if summary.chunks else 0.0
        print(f"{name:<10} {sec:>9.3f} {share:>6.1f}% {per:>9.1f}")
    print(
        f"total      {summary.seconds:>9.3f}  {summary.chunks} chunks, {_fmt_mb(summary.bytes)}:"
        f" {summary.chunks_per_s:,.0f} chunks/s, {summary.mb_per_s:.2f} MB/s"
        f" ({summary.commits} commits)"
    )
    return 0


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
                print(_JSON.encode(event).decode(), flush=True)
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
    return 0


def _cmd_eavesdrop(args: argparse.Namespace) -> int:
    from sentient_core.events import SessionEvent, follow, read_events
    from sentient_core.liveview import render

    with _open_store(args, readonly=True) as store:
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
                    print(_JSON.encode(event).decode(), flush=True)
                else:
                    line = render(event, with_time=True)
                    if line is not None:
                        print(line, flush=True)
        except KeyboardInterrupt:
            pass
    return 0


def _cmd_budget(args: argparse.Namespace) -> int:
    from sentient_core.autonomy.budget import Budget

    with _open_store(args, readonly=True) as store:
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

    with _open_store(args, readonly=args.topic is None) as store:
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


def _cmd_quality(args: argparse.Namespace) -> int:
    from sentient_core.retrieval_eval import format_report, run_eval

    reports = [
        run_eval(name, n_queries=args.queries, seed=args.seed, level=level)
        for name in ("token", "char-compat")
        for level in ("chunk", "doc")
    ]
    if args.json:
        print(json.dumps([r.as_dict() for r in reports], indent=2))
    else:
        print(
            "known-item retrieval over Python's own documentation (pydoc topics + stdlib"
            f" docstrings); query = a random 12-word window (seed {args.seed})"
        )
        print(format_report(reports))
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from sentient_core.errors import ArgumentError
    from sentient_core.evaluation import evaluate, format_report

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
            progress=progress,
        )
    except ArgumentError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(msgspec.to_builtins(report), indent=2, ensure_ascii=False))
    else:
        print(format_report(report))
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
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="data directory (default: $SENTIENT_HOME or the user data dir)",
    )
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

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir",
        type=Path,
        default=argparse.SUPPRESS,
        help="data directory (default: $SENTIENT_HOME or the user data dir)",
    )

    ing = sub.add_parser(
        "ingest",
        parents=[common],
        help="ingest files and folders (txt, md, json, html, pdf) into memory",
        description="Extract, chunk (2000 chars, 200 overlap), encode and store every "
        "supported file under the given paths. Bad files are reported and skipped.",
    )
    ing.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (recursive)")
    ing.add_argument("--batch", type=_positive_int, default=512, help="chunks per commit")
    ing.add_argument("--json", action="store_true", help="print the summary as JSON")
    ing.set_defaults(func=_cmd_ingest)

    rec = sub.add_parser(
        "recall", parents=[common], help="recall the traces most similar to a query"
    )
    rec.add_argument("query", help="query text")
    rec.add_argument("-k", type=_positive_int, default=10, help="number of traces (default 10)")
    rec.add_argument("--threshold", type=float, default=0.0, help="minimum cosine score")
    rec.add_argument(
        "--no-touch",
        action="store_true",
        help="read-only: do not bump use counts (safe while a learner writes)",
    )
    rec.add_argument("--json", action="store_true", help="print JSON")
    rec.set_defaults(func=_cmd_recall)

    prof = sub.add_parser(
        "profile",
        parents=[common],
        help="profile memory-integration throughput stage by stage",
        description="Ingest a corpus (the given paths, or a generated one) into a fresh "
        "temporary store (or --data-dir) and report time per stage, chunks/s and MB/s.",
    )
    prof.add_argument("paths", nargs="*", metavar="PATH", help="corpus files or folders")
    prof.add_argument(
        "--size-mb", type=float, default=20.0, help="generated corpus size (default 20)"
    )
    prof.add_argument("--seed", type=int, default=0, help="generated corpus seed")
    prof.add_argument("--batch", type=_positive_int, default=512, help="chunks per commit")
    prof.add_argument("--json", action="store_true", help="print JSON")
    prof.set_defaults(func=_cmd_profile)

    learn = sub.add_parser(
        "learn",
        parents=[common],
        help="run the chaperone-gated learning loop (offline corpus by default)",
        description="curiosity → query → chaperone → ingest → integrate → judge → reflect, "
        "with a live view of each step and a summary. No LLM and no network unless --llm.",
    )
    learn.add_argument(
        "--iterations", type=_positive_int, default=10, help="iterations (max 100 per session)"
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

    qual = sub.add_parser(
        "quality",
        help="retrieval quality: recall@1/@10 and score distributions, default vs compatibility encoder",
    )
    qual.add_argument("--queries", type=_positive_int, default=1000, help="queries per encoder")
    qual.add_argument("--seed", type=int, default=0, help="query sampling seed")
    qual.add_argument("--json", action="store_true", help="print JSON")
    qual.set_defaults(func=_cmd_quality)

    ev = sub.add_parser(
        "evaluate",
        help="learning-efficacy benchmark on your own Q/A set: ingest vs learn vs bm25s",
        description="Run each mode on a fresh temporary store and report answer@1/@k, judge "
        "precision, chunks/tool calls/iterations per answered question, duplicate stores, "
        "repeat-query rate and silent drops; --free-run N runs the default offline learner "
        "for N iterations and lists every success verdict.",
    )
    ev.add_argument("qa", nargs="?", metavar="QA.json", help='[{"q": ..., "answers": [...]}, ...]')
    ev.add_argument("--corpus", metavar="DIR", help="the folder the answers come from")
    ev.add_argument(
        "--mode", choices=("ingest", "learn", "both"), default="both", help="default both"
    )
    ev.add_argument("-k", type=_positive_int, default=5, help="passages recalled (default 5)")
    ev.add_argument(
        "--iterations-per-question",
        type=_positive_int,
        default=3,
        help="learn mode: at most this many iterations per question (default 3)",
    )
    ev.add_argument(
        "--sample", type=_positive_int, default=None, help="a seeded sample of N questions"
    )
    ev.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    ev.add_argument(
        "--free-run",
        type=int,
        default=0,
        metavar="N",
        help="also run the default offline learner N iterations (no questions) on a fresh store",
    )
    ev.add_argument("--json", action="store_true", help="print JSON")
    ev.set_defaults(func=_cmd_evaluate)

    w = sub.add_parser(
        "warmup", help="compile every kernel (or load it from the Numba cache) and report the time"
    )
    w.add_argument("--json", action="store_true", help="print JSON")
    w.set_defaults(func=_cmd_warmup)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    args = build_parser().parse_args(argv)
    from sentient_core.store import StoreError

    try:
        return int(args.func(args))
    except StoreError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
