"""HTML extraction time against input size, for normal and adversarial pages.

Run from a checkout (``PYTHONPATH`` selects which code is measured, so the same
script measures the code before and after a change)::

    PYTHONPATH=. python bench/html_scaling.py                     # 1..32 MB, every shape
    PYTHONPATH=. python bench/html_scaling.py --sizes 1,2,4 --shapes normal,a_lt
    PYTHONPATH=. python bench/html_scaling.py --json > html_scaling.json
    PYTHONPATH=. python bench/html_scaling.py --extractor ours,trafilatura --repeat 3 --memory

Each cell is one call of :func:`sentient_core.ingest.extract_bytes` on an
in-memory page (decode + parse + main-content selection + text), with the time
budget off. A refusal (e.g. nesting past the parser's depth cap) is timed like
a success and marked. A call that runs past ``--limit`` seconds is interrupted
(SIGALRM; works for pure-Python parsers) and the larger sizes of that shape
are skipped. The exponent is the slope of log(CPU time) against log(size)
over the measured sizes: 1 is linear, 2 quadratic. MB/s is per CPU second.

``--extractor`` names one or more extractors (bench/html_extractors.py: ours,
trafilatura and its configurations); on each page they run in turn, ``--repeat``
rounds (A, B, A, B, …), and each cell reports the median. ``--memory`` adds,
per cell and extractor, the growth of peak RSS during one extraction in a fresh
process (page built and modules imported first), in MB.

Shapes
------
normal    real Sphinx pages (Python's docs when installed, else tests/data/html)
          repeated inside one document
a_lt      ``<a<a<a…`` (one endless bogus tag: the stdlib parser's quadratic case)
comment   a paragraph, then an unclosed ``<!--`` and comment text to the end
nested    ``<div>`` nested without end (deep nesting: lexbor's quadratic case)
sawtooth  nesting 2000 deep and back, repeated (deep but within any depth cap)
attrs     one tag with endless attributes
misnest   ``<b><p>x</b>`` repeated (formatting-element reconstruction)
cells     ``<table><tr><td>x`` repeated (tables that never close)
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import resource
import signal
import statistics
import sys
import time
from pathlib import Path

from bench import html_extractors
from bench.html_extractors import Extractor
from sentient_core.ingest import IngestError

MB = 1 << 20
ROOT = Path(__file__).resolve().parent.parent
SHAPES = ("normal", "a_lt", "comment", "nested", "sawtooth", "attrs", "misnest", "cells")


def _real_bodies() -> list[bytes]:
    docs = Path("/usr/share/doc/python3.11/html/library")
    names = ["os.html", "json.html", "re.html", "collections.html", "pathlib.html"]
    pages = [docs / n for n in names if (docs / n).is_file()]
    if not pages:
        pages = sorted((ROOT / "tests" / "data" / "html").glob("*.html"))
    bodies = []
    for p in pages:
        data = p.read_bytes()
        start = data.find(b"<body")
        end = data.rfind(b"</body>")
        bodies.append(data[data.index(b">", start) + 1 : end] if start >= 0 else data)
    return bodies


def make_page(shape: str, size: int) -> bytes:
    """A page of ``size`` bytes (within one unit) of the given shape."""
    head = b'<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body>'
    if shape == "normal":
        bodies = _real_bodies()
        parts = [head]
        n = len(head)
        i = 0
        while n < size:
            parts.append(bodies[i % len(bodies)])
            n += len(parts[-1])
            i += 1
        return b"".join(parts)[:size] + b"</body></html>"
    if shape == "comment":
        lead = head + b"<p>The visible paragraph.</p><!-- "
        return lead + b"comment text " * ((size - len(lead)) // 13)
    if shape == "sawtooth":
        unit = b"<div>x" * 2000 + b"</div>" * 2000
        return head + unit * max(1, size // len(unit))
    units = {
        "a_lt": b"<a",
        "nested": b"<div>",
        "attrs": b' a="1" b=2',
        "misnest": b"<b><p>x</b>",
        "cells": b"<table><tr><td>x",
    }
    unit = units[shape]
    body = unit * (size // len(unit))
    return head + b"<p" + body if shape == "attrs" else head + body


class _Timeout(Exception):
    pass


def _alarm(_signum, _frame):
    raise _Timeout


def measure(
    data: bytes, limit: float, extract: Extractor | None = None
) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, outcome) of one extraction; outcome is 'ok',
    an error name or 'timeout'. CPU time is the steadier figure on a shared machine."""
    if extract is None:
        extract = html_extractors.get("ours")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.perf_counter()
    c0 = time.process_time()
    try:
        extract("page.html", data)
        outcome = "ok"
    except IngestError as err:
        outcome = type(err).__name__
    except _Timeout:
        outcome = "timeout"
    finally:
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return elapsed, cpu, outcome


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def _peak_child(name: str, shape: str, size: int, limit: float, out) -> None:
    extract = html_extractors.get(name)
    data = make_page(shape, size)
    try:  # Linux: reset the high-water mark, so import-time peaks do not hide ours
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = _status_kib("VmRSS")
        measure(data, limit, extract)
        growth = _status_kib("VmHWM") - before
    except OSError:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        measure(data, limit, extract)
        growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    out.send(growth)


def peak_rss_mb(name: str, shape: str, size: int, limit: float) -> float:
    """Growth of peak RSS (MB) during one extraction, in a fresh (spawned) process."""
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_peak_child, args=(name, shape, size, limit, send))
    child.start()
    kib = recv.recv() if recv.poll(limit + 60) else math.nan
    child.join()
    return kib / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,2,4,8,16,32", help="sizes in MB (floats allowed)")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--limit", type=float, default=120.0, help="seconds per call before giving up")
    ap.add_argument(
        "--extractor",
        default="ours",
        help=f"comma-separated, run in turn: {', '.join(html_extractors.NAMES)}",
    )
    ap.add_argument("--repeat", type=int, default=1, help="rounds per cell (median reported)")
    ap.add_argument("--memory", action="store_true", help="peak RSS growth, in a fresh process")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = [float(x) for x in args.sizes.split(",")]
    names = html_extractors.parse(args.extractor)
    extractors = {n: html_extractors.get(n) for n in names}
    width = max(len(n) for n in names)
    rows = []
    for shape in args.shapes.split(","):
        points: dict[str, list[tuple[int, float]]] = {n: [] for n in names}
        live = list(names)  # extractors that have not timed out on this shape
        for mb in sizes:
            if not live:
                break
            data = make_page(shape, int(mb * MB))
            runs: dict[str, list[tuple[float, float, str]]] = {n: [] for n in live}
            for _ in range(max(1, args.repeat)):
                for n in live:
                    if not any(r[2] == "timeout" for r in runs[n]):
                        runs[n].append(measure(data, args.limit, extractors[n]))
            for n in list(live):
                outcomes = [r[2] for r in runs[n]]
                seconds = statistics.median(r[0] for r in runs[n])
                cpu = statistics.median(r[1] for r in runs[n])
                outcome = "timeout" if "timeout" in outcomes else outcomes[0]
                row = {
                    "extractor": n,
                    "shape": shape,
                    "mb": mb,
                    "bytes": len(data),
                    "runs": len(runs[n]),
                    "seconds": seconds,
                    "cpu_seconds": cpu,
                    "mb_per_cpu_s": len(data) / MB / cpu if cpu > 0 else math.inf,
                    "outcome": outcome,
                }
                if args.memory and outcome != "timeout":
                    row["peak_rss_mb"] = peak_rss_mb(n, shape, int(mb * MB), args.limit)
                rows.append(row)
                if not args.json:
                    mem = f" {row['peak_rss_mb']:>7.0f} MB peak" if "peak_rss_mb" in row else ""
                    print(
                        f"{shape:<9} {n:<{width}} {mb:>6g} MB {seconds:>9.3f} s wall"
                        f" {cpu:>9.3f} s CPU {row['mb_per_cpu_s']:>9.1f} MB/s{mem}  {outcome}",
                        flush=True,
                    )
                if outcome == "timeout":
                    live.remove(n)
                else:
                    points[n].append((len(data), cpu))
        for n in names:
            pts = points[n]
            if len(pts) >= 2 and pts[0][1] > 0:
                (b0, t0), (b1, t1) = pts[0], pts[-1]
                exponent = math.log(t1 / t0) / math.log(b1 / b0)
                if not args.json:
                    print(f"{shape:<9} {n:<{width}} exponent {exponent:.2f} (1 = linear)")
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
