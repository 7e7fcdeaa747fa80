"""HTML extraction time against input size, for normal and adversarial pages.

Run from a checkout (``PYTHONPATH`` selects which code is measured, so the same
script measures the code before and after a change)::

    PYTHONPATH=. python bench/html_scaling.py                     # 1..32 MB, every shape
    PYTHONPATH=. python bench/html_scaling.py --sizes 1,2,4 --shapes normal,a_lt
    PYTHONPATH=. python bench/html_scaling.py --json > html_scaling.json

Each cell is one call of :func:`sentient_core.ingest.extract_bytes` on an
in-memory page (decode + parse + main-content selection + text), with the time
budget off. A refusal (e.g. nesting past the parser's depth cap) is timed like
a success and marked. A call that runs past ``--limit`` seconds is interrupted
(SIGALRM; works for pure-Python parsers) and the larger sizes of that shape
are skipped. The exponent is the slope of log(CPU time) against log(size)
over the measured sizes: 1 is linear, 2 quadratic. MB/s is per CPU second.

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
import inspect
import json
import math
import signal
import sys
import time
from pathlib import Path

from sentient_core.ingest import IngestError, extract_bytes

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


def measure(data: bytes, limit: float) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, outcome) of one extraction; outcome is 'ok',
    an error name or 'timeout'. CPU time is the steadier figure on a shared machine."""
    kwargs = {}
    if "time_budget" in inspect.signature(extract_bytes).parameters:
        kwargs["time_budget"] = None
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.perf_counter()
    c0 = time.process_time()
    try:
        extract_bytes("page.html", data, **kwargs)
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,2,4,8,16,32", help="sizes in MB (floats allowed)")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--limit", type=float, default=120.0, help="seconds per call before giving up")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = [float(x) for x in args.sizes.split(",")]
    rows = []
    for shape in args.shapes.split(","):
        points = []
        for mb in sizes:
            data = make_page(shape, int(mb * MB))
            seconds, cpu, outcome = measure(data, args.limit)
            row = {
                "shape": shape,
                "mb": mb,
                "bytes": len(data),
                "seconds": seconds,
                "cpu_seconds": cpu,
                "mb_per_cpu_s": len(data) / MB / cpu if cpu > 0 else math.inf,
                "outcome": outcome,
            }
            rows.append(row)
            if not args.json:
                print(
                    f"{shape:<9} {mb:>6g} MB {seconds:>9.3f} s wall {cpu:>9.3f} s CPU"
                    f" {row['mb_per_cpu_s']:>9.1f} MB/s  {outcome}",
                    flush=True,
                )
            if outcome == "timeout":
                break
            points.append((len(data), cpu))
        if len(points) >= 2 and points[0][1] > 0:
            (b0, t0), (b1, t1) = points[0], points[-1]
            exponent = math.log(t1 / t0) / math.log(b1 / b0)
            if not args.json:
                print(f"{shape:<9} exponent {exponent:.2f} (1 = linear)", flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
