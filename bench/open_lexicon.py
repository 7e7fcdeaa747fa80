"""Open time with the persisted lexical index vs rebuilding it, A/B in fresh processes.

Issue 25 item 2. Opens an existing store read-only (nothing is written) in a
fresh process per round, alternating the two ways: ``snapshot`` (the normal
open: the lexicon snapshot read, the rows above it folded in) and ``rebuild``
(the snapshot ignored: every row's stored terms read and inverted, as before).
Prints each round's wall time of ``HolographicMemory(store)`` and its parts
(mirror and primes, snapshot read, lexical index), then medians and the ratio.
Build a store first, e.g. ``bench/ten_million.py --rows 1000000 --keep``, and
open it writable once so it has a snapshot.

    PYTHONPATH=. python bench/open_lexicon.py STORE_DIR [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
from sentient_core.memory import HolographicMemory, lexical, lexical_persist, mirror, writer
from sentient_core.store import Store

parts = {"mirror": 0.0, "snapshot_read": 0.0, "lexical": 0.0}

def timed(name, fn):
    def run(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            parts[name] += time.perf_counter() - t
    return run

writer.load = timed("mirror", mirror.load)
read = lexical_persist.read if sys.argv[2] == "snapshot" else (lambda store, n: None)
lexical_persist.read = timed("snapshot_read", read)
lexical.load = timed("lexical", lexical.load)
store = Store.open(sys.argv[1], readonly=True)
t = time.perf_counter()
memory = HolographicMemory(store)
total = time.perf_counter() - t
view = memory.view()
print(json.dumps({"open_s": total, **parts, "rows": view.n, "postings": view.lexical.postings,
                  "snapshot_rows": memory._w.lex_rows}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    runs: dict[str, list[dict]] = {"snapshot": [], "rebuild": []}
    for r in range(args.rounds):
        for way in ("snapshot", "rebuild"):  # A/B/A/B: both see the same load
            t = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", CHILD, args.store, way],
                check=True,
                capture_output=True,
                text=True,
            )
            got = json.loads(out.stdout.strip().splitlines()[-1])
            got["process_s"] = time.perf_counter() - t
            runs[way].append(got)
            if not args.json:
                print(
                    f"round {r} {way:8s} open {got['open_s'] * 1e3:7.0f} ms  mirror"
                    f" {got['mirror'] * 1e3:6.0f}  snapshot read {got['snapshot_read'] * 1e3:5.0f}"
                    f"  lexical {got['lexical'] * 1e3:6.0f}  (rows {got['rows']:,},"
                    f" snapshot rows {got['snapshot_rows']:,})",
                    flush=True,
                )
    med = {
        way: {k: statistics.median(g[k] for g in rs) for k in ("open_s", "mirror", "lexical")}
        for way, rs in runs.items()
    }
    if args.json:
        print(json.dumps({"runs": runs, "median": med}))
        return
    for way, m in med.items():
        print(
            f"median {way:8s} open {m['open_s'] * 1e3:7.0f} ms  mirror {m['mirror'] * 1e3:6.0f}"
            f"  lexical {m['lexical'] * 1e3:6.0f}"
        )
    print(
        f"snapshot / rebuild: open {med['snapshot']['open_s'] / med['rebuild']['open_s']:.2f},"
        f" lexical {med['snapshot']['lexical'] / med['rebuild']['lexical']:.3f}"
    )


if __name__ == "__main__":
    main()
