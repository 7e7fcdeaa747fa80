"""The security table of docs/security.md: every attack of tests/hostile.py against a real
``cli.py serve`` child, what it must get and what it got; then the server's log and store.

    PYTHONPATH=. python bench/security_table.py            # print the table
    PYTHONPATH=. python bench/security_table.py --write    # and put it in docs/security.md

Exit 1 when any attack got something else than it must.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from tests.hostile import close_and_check, launch, run_all, table

DOCS = Path(__file__).resolve().parent.parent / "docs" / "security.md"
START, END = "<!-- hostile-table -->", "<!-- /hostile-table -->"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fuzz", type=int, default=10_000, help="fuzzed parameter values")
    parser.add_argument("--write", action="store_true", help=f"update the table in {DOCS.name}")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, launch(Path(tmp)) as target:
        rows = run_all(target, fuzz_values=args.fuzz)
        rows += close_and_check(target)
    text = table(rows)
    bad = sum(not r.ok for r in rows)
    print(text)
    print(f"\n{len(rows) - bad} of {len(rows)} as expected ({time.perf_counter() - t0:.0f} s)")
    if args.write:
        write_table(DOCS, text)
    return 1 if bad else 0


def write_table(doc: Path, text: str) -> None:
    """Replace what stands between the table's markers in ``doc`` by ``text``."""
    head, rest = doc.read_text().split(START, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{START}\n{text}\n{END}{tail}")


if __name__ == "__main__":
    sys.exit(main())
