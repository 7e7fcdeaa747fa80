"""CPU time of one-query float32 top-k: the working tree's kernel against the same file at a git revision.

Loads ``kernels/holographic.py`` as it was at ``--rev`` (``git show``) into a
temporary module and times both kernels on the bench's codes (unit rows × 256,
the 16 bench queries, k = 10, one thread), in turn, ``--repeat`` rounds;
prints the medians and their ratio, after checking that both return the same
ids and scores. Used to find the cost of a change to the float32 scan (the
peer the int8 search is measured against).

    PYTHONPATH=. python bench/topk_revision_ab.py --rev 88aa081 [--rows 1000000]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from sentient_core.benchmarks import cases_holographic
from sentient_kernels import holographic
from sentient_kernels.config import prefer_passive_threads

K = 10


def _load_at(rev: str, folder: Path):
    src = subprocess.run(
        ["git", "show", f"{rev}:kernels/holographic.py"], check=True, capture_output=True
    ).stdout
    path = folder / f"holographic_{rev}.py"
    path.write_bytes(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", required=True)
    ap.add_argument("--rows", type=int, default=cases_holographic.FULL_ROWS)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    prefer_passive_threads()
    numba.set_num_threads(1)
    data = cases_holographic._data(args.rows)
    codes, queries = data["codes"], data["queries"]
    with tempfile.TemporaryDirectory() as tmp:
        old = _load_at(args.rev, Path(tmp))
        arms = {"working tree": holographic, args.rev: old}
        for q in queries:
            a = holographic.topk_cosine(codes, q, K, normalized=True)
            b = old.topk_cosine(codes, q, K, normalized=True)
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        times: dict[str, list[float]] = {name: [] for name in arms}
        for _ in range(args.repeat):
            for name, mod in arms.items():
                t0 = time.process_time()
                for q in queries:
                    mod.topk_cosine(codes, q, K, normalized=True)
                times[name].append((time.process_time() - t0) * 1e3 / len(queries))
    med = {name: float(np.median(v)) for name, v in times.items()}
    for name, v in times.items():
        print(f"{name:>12}: {med[name]:.1f} CPU ms/query (runs {np.round(v, 1).tolist()})")
    print(f"working tree / {args.rev} = {med['working tree'] / med[args.rev]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
