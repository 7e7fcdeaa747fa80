"""SSE latency: from an event's emission (its ``t``) to its arrival in a real browser.

Starts ``serve`` in this process on a fresh store (default offline learner,
interval ``--interval``), opens the panel in Debian's headless chromium, and
adds one more EventSource in the page that records, for each event,
``arrival - t`` (both from the machine's clock: the page's
``performance.timeOrigin + performance.now()`` and the bus's ``time.time()``).
Prints the median, p90 and p99 over ``--events`` live events, once per
``--flush-delay-ms`` value (the server lets events gather that long before
committing them to the audit log, which is the stream).

    PYTHONPATH=. python bench/sse_latency.py [--events 200] [--flush-delay-ms 5 0 50]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sentient_core.config import load
from sentient_core.server import Server
from sentient_kernels.config import prefer_passive_threads
from tests.servers.browser import Browser

RECORDER = """
const after = arguments[0];
window.__lat = [];
const es = new EventSource('/learning/stream?after=' + after);
es.onmessage = (m) => {
  const now = (performance.timeOrigin + performance.now()) / 1000;
  const e = JSON.parse(m.data);
  window.__lat.push([Number(m.lastEventId), e.kind, now - e.t]);
};
window.__es = es;
"""


def measure(events: int, delay_ms: float, interval: float, browser: Browser) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="sse-latency-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        (data / "sentient.toml").write_text(
            f"[learner]\ninterval_s = {interval}\n[server]\nport = 0\nflush_delay_ms = {delay_ms}\n"
        )
        server = Server(data, load(data, env={}), env={}).start()
        try:
            d = browser.driver
            d.get(server.login_url())
            browser.wait(lambda: browser.text("conn") == "live", what="the panel's stream")
            last = server.host.bus.published  # nothing before this run's events
            d.execute_script(RECORDER, -1 if last == 0 else 10**12)
            token = {"Authorization": f"Bearer {server.policy.token}"}
            import httpx

            httpx.post(server.url + "learning/start", headers=token, timeout=30)
            deadline = time.monotonic() + 600
            while d.execute_script("return window.__lat.length") < events:
                if time.monotonic() > deadline:
                    raise SystemExit("timed out collecting events")
                time.sleep(0.1)
            httpx.post(server.url + "learning/stop", headers=token, timeout=60)
            rows = d.execute_script("return window.__lat")
        finally:
            server.stop()
    # Skip the replayed history (none on a fresh store) and keep the first `events` live ones.
    return [lat for _, _, lat in rows[:events]]


def main() -> None:
    prefer_passive_threads()  # as `sentient` does: no spinning OpenMP threads in the timings
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=200)
    p.add_argument("--interval", type=float, default=0.2, help="seconds between iterations")
    p.add_argument("--flush-delay-ms", type=float, nargs="+", default=[5.0])
    args = p.parse_args()
    browser = Browser()
    try:
        print(f"{'flush delay':>12} {'events':>7} {'median ms':>10} {'p90 ms':>8} {'p99 ms':>8}")
        for delay in args.flush_delay_ms:
            lat = sorted(x * 1000 for x in measure(args.events, delay, args.interval, browser))
            q = statistics.quantiles(lat, n=100)
            print(
                f"{delay:>10g} ms {len(lat):>7} {statistics.median(lat):>10.1f}"
                f" {q[89]:>8.1f} {q[98]:>8.1f}"
            )
    finally:
        browser.quit()


if __name__ == "__main__":
    main()
