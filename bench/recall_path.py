"""The call path of one server recall: which of our modules it enters, and how often.

Issue 21's target is a server recall that enters no module twice. This records
every call into a ``sentient_core``/``sentient_kernels`` module from another
module (``sys.setprofile``) during one ``LearnerHost.recall`` on a small served
store, and prints the path and the modules entered more than once, apart from
the store's transaction handle (:data:`HANDLE`: the object every read holds,
entered once per method called on it, as lmdb's own would be).

The measured query is not the warm-up's, so the query is read from scratch (its
words, code and terms); the traces' words are cached per trace after their first
recall (``--cold`` measures a recall whose hits were never recalled before).

    PYTHONPATH=. python bench/recall_path.py [--rank scored|hybrid|bm25|cosine] [--cold] [--path]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from sentient_core.analysis import query_words
from tests.servers.sentient import served

DOCS = {
    "a.txt": "Tides follow the moon and the sun.",
    "b.txt": "Bees dance to show where flowers are.",
}
QUERY = "what do tides follow"
WARM = "which way do bees dance"  # the same hits as QUERY: their words are cached

HANDLE = frozenset(
    {"sentient_core.store.env", "sentient_core.store.txn", "sentient_core.store.transactions"}
)
"""The store's transaction handle (see the module docstring)."""


def record(rank: str, *, cold: bool = False, explain: bool = False) -> list[str]:
    """The modules entered, in order, by one recall (consecutive repeats collapsed)."""
    with tempfile.TemporaryDirectory() as d, served(Path(d)) as s:
        for name, text in DOCS.items():
            s.client.post(f"/ingest?name={name}", content=text.encode())
        host = s.host
        if cold:  # a code query: the factor table is built, no trace's words are read
            code = np.ones(host.core.memory.view().code_dim, dtype=np.float32)
            host.core.recall(code, 5, rank="scored" if rank == "scored" else "cosine")
        else:
            host.recall(WARM, 5, explain, rank=rank)  # kernels, caches
        query_words.cache_clear()  # the measured query is read from scratch
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
            host.recall(QUERY, 5, explain, rank=rank)
        finally:
            sys.setprofile(None)
    return [m for i, m in enumerate(entries) if i == 0 or entries[i - 1] != m]


def repeated(path: list[str], exclude: frozenset[str] = HANDLE) -> dict[str, int]:
    """Modules of ``path`` (outside ``exclude``) entered more than once, and how often."""
    kept = [m for m in path if m not in exclude]
    kept = [m for i, m in enumerate(kept) if i == 0 or kept[i - 1] != m]
    return {m: n for m, n in Counter(kept).most_common() if n > 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rank", default="scored", choices=("scored", "hybrid", "bm25", "cosine"))
    parser.add_argument("--cold", action="store_true", help="hits never recalled before")
    parser.add_argument("--explain", action="store_true", help="recall with explanations")
    parser.add_argument("--path", action="store_true", help="print the whole path")
    args = parser.parse_args()
    path = record(args.rank, cold=args.cold, explain=args.explain)
    if args.path:
        print("\n".join(path))
    modules = set(path)
    twice = repeated(path)
    handle = repeated(path, frozenset()).keys() & HANDLE
    print(
        f"{len(path)} entries into {len(modules)} modules; {len(twice)} entered more than"
        f" once outside the transaction handle{':' if twice else ''}"
    )
    for module, n in twice.items():
        print(f"  {n}x {module}")
    if handle:
        print(f"(the handle: {', '.join(sorted(handle))} entered once per method called)")


if __name__ == "__main__":
    main()
