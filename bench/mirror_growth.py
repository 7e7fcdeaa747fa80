"""Growing the memory mirror: peak anonymous memory with the reserved mapping against
copy-and-grow (``FACTOR`` 1: every growth copies, as before issue 25).

Grows a :class:`~sentient_core.memory.mirror.Mirror` of 256-dim codes to ``ROWS`` rows in
steps of 10,000, writing each new row, with the old mirror still referenced while the
new one fills (as a reader would hold it), and prints the peak and final anonymous
memory (``RssAnon``) above the start.

    PYTHONPATH=. python bench/mirror_growth.py ROWS FACTOR     (e.g. 2000000 8, then 1)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import sentient_core.memory.mirror as mirror

STEP = 10_000


def anon_mb() -> float:
    """Resident anonymous memory of this process, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return 0.0


def grow(rows: int, factor: int) -> tuple[float, float]:
    """Peak and final anonymous memory (MB above the start) growing a mirror to ``rows``."""
    mirror.RESERVE_FACTOR = factor
    base = anon_mb()
    m = mirror.Mirror(1024, 256)
    peak = 0.0
    for n in range(STEP, rows + 1, STEP):
        g = m.with_room(n)
        g.codes[m.n : n] = 1.0
        g.row_id[m.n : n] = 0
        peak = max(peak, anon_mb() - base)  # the old mirror is still referenced here
        g.n = n
        m = g
    return peak, anon_mb() - base


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", type=int)
    ap.add_argument("factor", type=int)
    args = ap.parse_args()
    peak, end = grow(args.rows, args.factor)
    print(
        f"reserve x{args.factor}: grow to {args.rows:,} rows x 256 dims: peak {peak:.0f} MB,"
        f" end {end:.0f} MB (codes alone {args.rows * 1024 / 2**20:.0f} MB)"
    )


if __name__ == "__main__":
    main()
