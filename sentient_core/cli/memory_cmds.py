"""``ingest``, ``recall``, ``profile`` and ``quality``: putting text into memory and getting it out."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import msgspec

from sentient_core.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_RESOURCES,
    interruptible,
    open_core,
    positive_int,
    text,
    warm_kernels,
)

__all__ = ["register"]


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


def _snippet(text: str, width: int = 160) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


def _cmd_ingest(args: argparse.Namespace) -> int:
    from sentient_core.integrate import Integrator
    from sentient_core.progress import ProgressLine

    with open_core(args, create=True) as core:  # first: a bad --data-dir fails at once
        # Compile before the clock starts (minutes on a cold cache, with progress):
        # compiling lazily inside the run showed "1/5 files" for minutes, then a rate
        # near 0 chunks/s.
        kernels_seconds = sum(w.seconds for w in warm_kernels(show=not args.json))
        integ = Integrator(core.memory, core.observer, batch=args.batch)
        bar = ProgressLine()
        with interruptible("stopping after the current file; what is read is committed") as stop:
            summary = integ.ingest(
                args.paths,
                progress=None if args.json else _ingest_progress(bar),
                stop=lambda: stop.requested,
            )
        bar.done()
    if args.json:
        print(json.dumps({**summary.as_dict(), "kernels_seconds": kernels_seconds}, indent=2))
    else:
        for skip in summary.skipped:
            print(f"skipped {skip.path}: {skip.reason}", file=sys.stderr)
        known = (
            f", {summary.duplicates} already known (not stored again)" if summary.duplicates else ""
        )
        print(
            f"ingested {summary.files} file(s), {summary.chunks} new chunks{known},"
            f" {_fmt_mb(summary.bytes)} in {summary.seconds:.2f} s"
            f" ({summary.chunks_per_s:,.0f} chunks/s, {summary.mb_per_s:.2f} MB/s);"
            f" {len(summary.skipped)} skipped"
        )
        if summary.unchanged:
            print(
                f"{summary.unchanged} file(s) unchanged since they were last ingested:"
                " nothing new, nothing stored"
            )
        if summary.changed:
            print(
                f"{summary.changed} file(s) changed since they were last ingested:"
                f" {summary.superseded} old chunk(s) superseded (retired)"
            )
    if summary.stopped_by:
        print(
            f"error: {summary.stopped_by}; stopped there: the {summary.chunks} chunk(s)"
            f" above were committed, nothing of the failed write",
            file=sys.stderr,
        )
        return EXIT_RESOURCES
    if summary.interrupted:
        print(
            f"interrupted: stopped after {summary.files} file(s); their {summary.chunks}"
            " chunk(s) were committed, the files after them not read",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return 1 if summary.files == 0 and summary.skipped else 0


def _cmd_recall_explained(args: argparse.Namespace) -> int:
    """``recall --explain``: the learned scorer's rank, with each factor's contribution."""
    from sentient_core.recall import ScoredRanking

    with open_core(args, readonly=True) as core:
        scored = core.ranking("scored")
        assert isinstance(scored, ScoredRanking)
        rows = scored.scored.explain(args.query, args.k)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no memory matches")
    for i, r in enumerate(rows, 1):
        parts = ", ".join(
            f"{k} {v:+.3f}" for k, v in sorted(r["contributions"].items(), key=lambda t: -abs(t[1]))
        )
        print(f"{i:>3}. {r['score']:.3f}  #{r['id']}  {r['source']}\n     {parts}")
        print(f"     {_snippet(r['text'])}")
    return 0


def _cmd_recall(args: argparse.Namespace) -> int:
    if args.explain:
        return _cmd_recall_explained(args)
    # Not read-only unless --no-touch (recall bumps use counts), yet never a new store.
    with open_core(args, readonly=args.no_touch) as core:
        # The same call as Core.recall and GET /recall (one ranking, one default).
        hits = core.recall(
            args.query,
            args.k,
            rank=args.rank,
            threshold=args.threshold,
            touch=not args.no_touch,
            spread=args.spread,
        )
        # A recall that holds nothing relevant makes the learner curious (not with
        # --no-touch: that opens the store read-only).
        miss = None if args.no_touch else core.misses.note(args.query, hits, "cli")
    rows = [
        {
            "rank": i + 1,
            "id": h.record.id,
            "score": h.score,
            "lexical": h.lexical,
            "cosine": h.cosine,
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
    for r in rows:
        print(f"{r['rank']:>3}. {r['score']:.3f}  #{r['id']}  {r['source']}")
        print(f"     {r['snippet']}")
    if miss is not None:
        print(
            f"memory holds nothing relevant: miss {miss.count} on this subject ({_miss_next(miss)})"
        )
    return 0


def _miss_next(miss) -> str:
    """What a recorded miss leads to, in words."""
    from sentient_core.misses import REPEATS

    if miss.status == "asked":
        return f"the learner is asking {miss.question!r}"
    if miss.status == "answered":
        return f"the learner answered {miss.question!r} before"
    if miss.count >= REPEATS:
        return "the learner will look for it"
    return f"the learner looks for it after {REPEATS} misses"


def _cmd_profile(args: argparse.Namespace) -> int:
    import tempfile

    from sentient_core.core import Core
    from sentient_core.corpus import generate_corpus
    from sentient_core.integrate import STAGES, Integrator
    from sentient_core.integrate.floor import raw_put_floor
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
        warm_kernels(show=not args.json)  # compile time is not a stage of integration
        with Core(data_dir) as core:
            integ = Integrator(
                core.memory,
                core.observer,
                batch=args.batch,
                background=not args.in_line,
            )
            bar = ProgressLine()
            cpu = time.process_time()  # every thread of this process
            summary = integ.ingest(paths, progress=None if args.json else _ingest_progress(bar))
            cpu = time.process_time() - cpu
            bar.done()
            # The same bytes put by raw py-lmdb, as many durable commits: the floor.
            floor = raw_put_floor(core.store, summary.commits, durable=core.store.durable)
    st = summary.stages
    other = max(summary.seconds - st.caller(), 0.0)
    if args.json:
        out = summary.as_dict()
        out["corpus"] = corpus
        out["untimed_seconds"] = other
        out["cpu_seconds"] = cpu
        out["floor"] = {
            **msgspec.to_builtins(floor),
            "chunks_per_s": summary.chunks / floor.seconds if floor.seconds else None,
            "ratio": floor.seconds / summary.seconds if summary.seconds else None,
        }
        print(json.dumps(out, indent=2))
        return 0
    print(f"corpus: {corpus}; {summary.files} files, {len(summary.skipped)} skipped")
    print(f"{'stage':<10} {'seconds':>9} {'share':>7} {'µs/chunk':>9}")
    notes: dict[str, str] = {}
    if not args.in_line:
        for name in ("keywords", "code", "commit"):
            notes[name] = "  commit thread (overlaps the caller's stages)"
        notes["wait"] = "  the caller blocked on the commit thread"
    for name in (*STAGES, "wait", "other"):
        sec = other if name == "other" else getattr(st, name)
        share = sec / summary.seconds * 100 if summary.seconds else 0.0
        per = sec / summary.chunks * 1e6 if summary.chunks else 0.0
        print(f"{name:<10} {sec:>9.3f} {share:>6.1f}% {per:>9.1f}{notes.get(name, '')}")
    print(
        f"total      {summary.seconds:>9.3f}  wall; {summary.chunks} chunks, {_fmt_mb(summary.bytes)}:"
        f" {summary.chunks_per_s:,.0f} chunks/s, {summary.mb_per_s:.2f} MB/s"
        f" ({summary.commits} commits)"
    )
    if summary.seconds > 0:
        print(
            f"cpu        {cpu:>9.3f}  CPU seconds of every thread:"
            f" {cpu / summary.seconds:.2f} cores busy on average"
        )
    if floor.seconds > 0 and summary.seconds > 0:
        print(
            f"floor      {floor.seconds:>9.3f}  raw LMDB puts of the same {floor.items:,} entries"
            f" ({_fmt_mb(floor.bytes)}) in {floor.commits} commit(s):"
            f" {summary.chunks / floor.seconds:,.0f} chunks/s; integration at"
            f" {floor.seconds / summary.seconds:.2f} of the floor"
        )
    print(
        f"(seconds: wall time of each stage on the thread that ran it; {st.offloaded:.3f} s of"
        " them ran off the caller's thread, overlapping; the rest, wait and other add up to"
        " total, the run's wall time)"
    )
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


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    ing = sub.add_parser(
        "ingest",
        parents=[common],
        help="ingest files and folders (txt, md, json, html, pdf) into memory",
        description="Extract, chunk (2000 chars, 200 overlap), encode and store every "
        "supported file under the given paths. Bad files are reported and skipped. Creates "
        "the store if there is none. The first run compiles the kernels before it starts "
        "(a progress line on stderr). Ctrl-C stops after the current file with what was "
        "read committed (exit 130).",
    )
    ing.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (recursive)")
    ing.add_argument("--batch", type=positive_int, default=512, help="chunks per commit")
    ing.add_argument("--json", action="store_true", help="print the summary as JSON")
    ing.set_defaults(func=_cmd_ingest)

    rec = sub.add_parser(
        "recall", parents=[common], help="recall the traces most relevant to a query"
    )
    rec.add_argument("query", type=text, help="query text")
    rec.add_argument("-k", type=positive_int, default=10, help="number of traces (default 10)")
    rec.add_argument(
        "--rank",
        choices=("scored", "hybrid", "bm25", "cosine"),
        default="scored",
        help="scored (default: the learned scorer over the hybrid, with what meta-memory"
        " learned: credit, source weights, debts, its best candidates re-ranked by"
        " question-passage relevance; see --explain), hybrid (BM25 + code cosine), bm25,"
        " or cosine of the codes",
    )
    rec.add_argument("--threshold", type=float, default=0.0, help="minimum score")
    rec.add_argument(
        "--spread",
        type=int,
        default=0,
        choices=range(4),
        metavar="HOPS",
        help="give the last of every five places to the hits' neighbours in the link graph"
        " reflection writes, HOPS link steps away (0, the default: off)",
    )
    rec.add_argument(
        "--no-touch",
        action="store_true",
        help="read-only: do not bump use counts (safe while a learner writes)",
    )
    rec.add_argument(
        "--explain",
        action="store_true",
        help="rank by the learned scorer (meta-memory) and show each factor's contribution",
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
    prof.add_argument("--batch", type=positive_int, default=512, help="chunks per commit")
    prof.add_argument(
        "--in-line",
        action="store_true",
        help="commit each batch on the caller's thread (no commit thread: nothing overlaps)",
    )
    prof.add_argument("--json", action="store_true", help="print JSON")
    prof.set_defaults(func=_cmd_profile)

    qual = sub.add_parser(
        "quality",
        help="retrieval quality: recall@1/@10 and score distributions, default vs compatibility encoder",
    )
    qual.add_argument("--queries", type=positive_int, default=1000, help="queries per encoder")
    qual.add_argument("--seed", type=int, default=0, help="query sampling seed")
    qual.add_argument("--json", action="store_true", help="print JSON")
    qual.set_defaults(func=_cmd_quality)
