"""The call path of one server recall: which of our modules it enters, and how often.

Issue 21's target is a server recall that enters no module twice. This records
every call into a ``sentient_core``/``kernels`` module from another module
(``sys.setprofile``) during one ``LearnerHost.recall`` on a small served store,
and prints the path and the modules entered more than once.

    PYTHONPATH=. python bench/recall_path.py [--rank scored|hybrid|bm25|cosine] [--path]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tests.servers.sentient import served

DOCS = {
    "a.txt": "Tides follow the moon and the sun.",
    "b.txt": "Bees dance to show where flowers are.",
}


def record(rank: str) -> list[str]:
    """The modules entered, in order, by one recall (consecutive repeats collapsed)."""
    with tempfile.TemporaryDirectory() as d, served(Path(d)) as s:
        for name, text in DOCS.items():
            s.client.post(f"/ingest?name={name}", content=text.encode())
        host = s.host
        host.recall("what do tides follow", 5, False, rank=rank)  # warm caches and kernels
        stack: list[str] = []
        entries: list[str] = []

        def profile(frame, event, arg) -> None:
            if event == "call":
                module = frame.f_globals.get("__name__", "?")
                if module.startswith(("sentient_core", "sentient_kernels")) and module != (
                    stack[-1] if stack else None
                ):
                    entries.append(module)
                stack.append(module)
            elif event == "return" and stack:
                stack.pop()

        sys.setprofile(profile)
        try:
            host.recall("what do tides follow", 5, False, rank=rank)
        finally:
            sys.setprofile(None)
    return [m for i, m in enumerate(entries) if i == 0 or entries[i - 1] != m]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rank", default="scored", choices=("scored", "hybrid", "bm25", "cosine"))
    parser.add_argument("--path", action="store_true", help="print the whole path")
    args = parser.parse_args()
    path = record(args.rank)
    counts = Counter(path)
    twice = {m: n for m, n in counts.most_common() if n > 1}
    if args.path:
        print("\n".join(path))
    print(f"{len(path)} entries into {len(counts)} modules; {len(twice)} entered more than once:")
    for module, n in twice.items():
        print(f"  {n}x {module}")


if __name__ == "__main__":
    main()
