"""The fewest of ingest's chunks that answer a Q/A set: the floor under `learn`'s chunk count.

    python bench/answer_floor.py bench/data/pydoc/qa.json bench/data/pydoc/corpus

The corpus is ingested into a fresh temporary store exactly as ``evaluate``'s
ingest mode does; a chunk *answers* a question when it contains one of its
answer strings (``evaluate``'s check). The minimum number of chunks answering
every answerable question, and at least ``--answered N`` of them (default:
as many as ingest mode answers in its top k), is an exact set-cover integer
programme (``scipy.optimize.milp``). A learner that stores fewer chunks than
the floor cannot match ingest's answer@k; one that must stay within a quarter
of ingest's chunks (issue 9's efficiency target) needs the floor below that.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from sentient_core.evaluation.qa import first_answer, load_qa
from sentient_core.evaluation.run import run_ingest


def min_chunks(holds: list[set[int]], n_chunks: int, answered: int) -> int:
    """Fewest chunks such that at least ``answered`` of the questions have a chunk in
    their set ``holds[q]`` (questions with an empty set can never count)."""
    questions = [h for h in holds if h]
    if answered > len(questions):
        raise ValueError(f"only {len(questions)} questions are answerable, asked {answered}")
    if answered <= 0:
        return 0
    nq = len(questions)
    cover = np.zeros((nq, n_chunks))
    for row, held in enumerate(questions):
        cover[row, sorted(held)] = 1.0
    # Variables: x (a chunk is kept), then y (a question counts). y_q <= Σ x over its
    # chunks; Σ y >= answered; minimise Σ x.
    a = np.hstack([cover, -np.eye(nq)])
    total = np.concatenate([np.zeros(n_chunks), np.ones(nq)])[None, :]
    res = milp(
        c=np.concatenate([np.ones(n_chunks), np.zeros(nq)]),
        constraints=[
            LinearConstraint(a, lb=0.0, ub=np.inf),
            LinearConstraint(total, lb=answered, ub=np.inf),
        ],
        integrality=np.ones(n_chunks + nq),
        bounds=Bounds(0, 1),
    )
    if not res.success:
        raise RuntimeError(f"the integer programme did not solve: {res.message}")
    return round(res.fun)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("qa")
    parser.add_argument("corpus")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--answered", type=int, default=None)
    args = parser.parse_args()
    items = load_qa(args.qa)
    with tempfile.TemporaryDirectory() as d:
        report, chunks = run_ingest(items, args.corpus, args.k, Path(d))
    holds = [
        {i for i, c in enumerate(chunks) if first_answer(c, it.answers) is not None} for it in items
    ]
    answerable = sum(1 for h in holds if h)
    target = report.answered if args.answered is None else args.answered
    everyone = min_chunks(holds, len(chunks), answerable)
    enough = min_chunks(holds, len(chunks), target)
    print(f"{args.qa}: {len(items)} questions, {len(chunks)} ingest chunks")
    print(f"  ingest answers {report.answered} in its top {args.k}; {answerable} have a chunk")
    print(f"  fewest chunks answering all {answerable}: {everyone}")
    print(f"  fewest chunks answering {target}: {enough}")
    print(f"  a quarter of ingest's chunks: {len(chunks) / 4:g}")


if __name__ == "__main__":
    main()
