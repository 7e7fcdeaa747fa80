"""Server overhead per iteration: the served learner vs ``learn`` in the foreground, same run.

Blocks alternate A/B/A/B… in one process, each on a fresh store with the same
offline corpus and ``--iterations`` iterations at interval 0:

A  ``learn`` in the foreground: ``build_learner`` + ``run(N, background=True)``
   in the main thread (what ``cli.py learn`` does, without printing).
B  ``serve``: the same learner behind the HTTP server (uvicorn in a thread,
   the flusher committing events every few ms), started by ``POST
   /learning/start``, with a live SSE client reading every event and the
   status polled every 0.5 s, as an open panel does.

Per iteration = the time between consecutive ``iteration``/``skip`` events
(the whole step, audit-log commits included). Prints each block's median and
the medians of the A and B medians. A first (untimed) block warms the kernels.

    PYTHONPATH=. python bench/server_overhead.py [--iterations 40] [--rounds 3]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx

from sentient_core.config import load
from sentient_core.core import Core
from sentient_core.events import IterationEvent, SkipEvent, read_events
from sentient_core.learning.session import build_learner
from sentient_core.server import Server
from sentient_kernels.config import prefer_passive_threads


def _durations(store) -> list[float]:
    ends = [e.t for _, e in read_events(store) if isinstance(e, IterationEvent | SkipEvent)]
    return [b - a for a, b in itertools.pairwise(ends)]


FLUSH_DELAY_MS = [5.0]


def _settings(data: Path, iterations: int) -> None:
    data.mkdir()
    (data / "sentient.toml").write_text(
        f"[learner]\ninterval_s = 0\niterations = {iterations}\nmax_iterations = {iterations}\n"
        f"[server]\nport = 0\nflush_delay_ms = {FLUSH_DELAY_MS[0]}\n"
    )


def foreground(tmp: Path, iterations: int) -> list[float]:
    data = tmp / "a"
    _settings(data, iterations)
    effective = load(data, env={})
    with Core(data) as core:
        learner = build_learner(core, effective.learner_settings(data, "bench-a"), env={})
        with learner:
            learner.run(iterations, background=True)
        return _durations(core.store)


def served(tmp: Path, iterations: int) -> list[float]:
    data = tmp / "b"
    _settings(data, iterations)
    server = Server(data, load(data, env={}), env={}).start()
    token = {"Authorization": f"Bearer {server.policy.token}"}
    stop = threading.Event()

    def panel() -> None:  # an open panel: the live stream and a status poll
        with (
            httpx.Client(base_url=server.url, headers=token, timeout=60) as c,
            c.stream("GET", "learning/stream", params={"after": -1}) as r,
        ):
            for _ in r.iter_lines():
                if stop.is_set():
                    return

    def poll() -> None:
        with httpx.Client(base_url=server.url, headers=token, timeout=60) as c:
            while not stop.is_set():
                c.get("learning/status")
                stop.wait(0.5)

    threads = [threading.Thread(target=f, daemon=True) for f in (panel, poll)]
    try:
        for t in threads:
            t.start()
        httpx.post(server.url + "learning/start", headers=token, timeout=60)
        while server.host.learner.running:  # the session ends after `iterations`
            time.sleep(0.05)
        return _durations(server.host.core.store)
    finally:
        stop.set()
        server.stop()


def main() -> None:
    prefer_passive_threads()  # as `sentient` does: no spinning OpenMP threads in the timings
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=40)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--flush-delay-ms", type=float, default=5.0, help="server.flush_delay_ms")
    args = p.parse_args()
    FLUSH_DELAY_MS[0] = args.flush_delay_ms
    medians: dict[str, list[float]] = {"A": [], "B": []}
    with tempfile.TemporaryDirectory(prefix="server-overhead-") as tmp:
        root = Path(tmp)
        (root / "warm").mkdir()
        foreground(root / "warm", 5)
        for r in range(args.rounds):
            for label, fn in (("A", foreground), ("B", served)):
                block = root / f"{label}{r}"
                block.mkdir()
                d = fn(block, args.iterations)
                m = statistics.median(d)
                medians[label].append(m)
                name = "learn (foreground)" if label == "A" else "serve (HTTP + SSE client)"
                print(
                    f"round {r + 1} {label} {name:<26} {len(d):>3} iterations,"
                    f" median {m * 1000:7.1f} ms/iteration"
                )
    a, b = statistics.median(medians["A"]), statistics.median(medians["B"])
    print(
        f"median of medians: A {a * 1000:.1f} ms, B {b * 1000:.1f} ms;"
        f" server overhead {(b - a) * 1000:+.1f} ms/iteration ({(b / a - 1) * 100:+.1f} %)"
    )


if __name__ == "__main__":
    main()
