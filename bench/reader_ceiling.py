"""How far a learned re-rank over lexical features moves the offline answerer's first passage.

    python bench/reader_ceiling.py bench/data/pydoc/qa.json bench/data/pydoc/corpus \\
        bench/data/debian/qa.json bench/data/debian/corpus

The efficiency target (learn ≥ ingest's answer@5 with ≤ 25 % stored) needs the
reader's *first* passage to hold the answer far more often than the offline
answerer's does. This asks whether any weighting of the lexical evidence the
project has could get there. For every question, the answerer's 24 best
passages (its own order: score + relevance) are described by eight features:
its score and relevance, the relevance of its heading, the share of the
question's content-term bigrams it repeats, how tightly the question's terms
sit together in it, whether it holds a signature or dunder name when the
question asks "which method/attribute/function…", whether it opens its
document, and 1/(1 + its rank). A pairwise logistic regression (a passage
holding an answer should outrank one that does not, in the same question)
is trained on the odd questions of every set and tested on the even ones, then
the other way round; the table adds both halves. ``any of 24`` is the ceiling
of every re-rank of these candidates.
"""

from __future__ import annotations

import argparse
import itertools
import re
from collections.abc import Sequence

import numpy as np

from sentient_core.evaluation.qa import first_answer, load_qa
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.splitting import with_heading
from sentient_core.relevance import content_terms, relevance

CANDIDATES = 24
FEATURES = ("score", "relevance", "heading", "bigrams", "proximity", "signature", "opens", "rank")
_SIGNATURE = re.compile(r"__\w+__|\b\w+\(")
_ASKS_NAME = re.compile(
    r"\b(?:which|what)\s+(?:method|methods|attribute|attributes|function|functions|command)\b",
    re.IGNORECASE,
)


def bigram_share(question: Sequence[str], passage: Sequence[str]) -> float:
    """Share of the question's adjacent term pairs that are adjacent in the passage."""
    wanted = set(itertools.pairwise(question))
    if not wanted:
        return 0.0
    return len(wanted & set(itertools.pairwise(passage))) / len(wanted)


def proximity(question: set[str], passage: Sequence[str]) -> float:
    """Question terms present / the shortest run of the passage holding them all (0 below 2)."""
    events = sorted((j, t) for j, t in enumerate(passage) if t in question)
    need = len({t for _, t in events})
    if need < 2:
        return 0.0
    best, held, left = len(passage) + 1, {}, 0
    for pos, term in events:
        held[term] = held.get(term, 0) + 1
        while len(held) == need:
            best = min(best, pos - events[left][0] + 1)
            gone = events[left][1]
            held[gone] -= 1
            if not held[gone]:
                del held[gone]
            left += 1
    return need / best


def question_rows(answerer: CorpusAnswerer, question: str, answers: Sequence[str]):
    """Features (one row per candidate, in the answerer's order) and whether each holds an answer."""
    stats = answerer.term_stats()
    ans = answerer.answer(question, k=CANDIDATES)
    q_terms = content_terms(question)
    asks_name = bool(_ASKS_NAME.search(question))
    rows, hits = [], []
    for rank, (head, passage, span, score) in enumerate(
        zip(ans.headings, ans.passages, ans.spans, ans.scores, strict=True)
    ):
        shown = with_heading(head, passage)
        terms = content_terms(shown)
        rows.append(
            [
                score,
                relevance(question, shown, stats),
                relevance(question, head, stats) if head else 0.0,
                bigram_share(q_terms, terms),
                proximity(set(q_terms), terms),
                float(asks_name and bool(_SIGNATURE.search(passage))),
                float(span[0] == 0),
                1.0 / (1.0 + rank),
            ]
        )
        hits.append(first_answer(shown, answers) is not None)
    return np.array(rows, dtype=np.float64).reshape(-1, len(FEATURES)), np.array(hits)


def fit_pairwise(questions, l2: float = 0.01, steps: int = 3000, lr: float = 0.5) -> np.ndarray:
    """Weights w minimising the logistic loss of w·(x_hit − x_miss) over same-question pairs."""
    diffs = [p - n for x, y in questions if y.any() and not y.all() for p in x[y] for n in x[~y]]
    if not diffs:
        return np.zeros(len(FEATURES))
    pairs = np.array(diffs)
    w = np.zeros(pairs.shape[1])
    for _ in range(steps):
        margin = pairs @ w
        grad = -(pairs * (1.0 / (1.0 + np.exp(margin)))[:, None]).mean(axis=0) + l2 * w
        w -= lr * grad
    return w


def top_counts(questions, w: np.ndarray | None) -> tuple[int, int]:
    """Questions whose first (first three) passages hold an answer; ``w=None``: the answerer's order."""
    top1 = top3 = 0
    for x, y in questions:
        if not len(y):
            continue
        order = np.arange(len(y)) if w is None else np.argsort(-(x @ w), kind="stable")
        top1 += bool(y[order[0]])
        top3 += bool(y[order[:3]].any())
    return top1, top3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="+", metavar="QA CORPUS")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("give Q/A files and corpus folders in pairs")
    sets = {}
    for qa, corpus in zip(args.pairs[::2], args.pairs[1::2], strict=True):
        answerer = CorpusAnswerer([corpus], include_python_docs=False)
        sets[qa] = [question_rows(answerer, it.q, it.answers) for it in load_qa(qa)]
    totals = {qa: np.zeros(4, dtype=int) for qa in sets}
    for half in (0, 1):
        train = [q for qs in sets.values() for j, q in enumerate(qs) if j % 2 == half]
        w = fit_pairwise(train)
        print(
            f"trained on half {half}: "
            + ", ".join(f"{f} {v:+.2f}" for f, v in zip(FEATURES, w, strict=True))
        )
        for qa, qs in sets.items():
            test = [q for j, q in enumerate(qs) if j % 2 != half]
            totals[qa] += (*top_counts(test, None), *top_counts(test, w))
    print(
        f"{'set':40s} {'n':>4s} {'top-1':>6s} {'top-3':>6s} {'re-rank top-1':>14s} {'top-3':>6s} {'any of 24':>9s}"
    )
    for qa, qs in sets.items():
        base1, base3, new1, new3 = totals[qa]
        ceiling = sum(bool(y.any()) for _, y in qs)
        print(f"{qa:40s} {len(qs):4d} {base1:6d} {base3:6d} {new1:14d} {new3:6d} {ceiling:9d}")


if __name__ == "__main__":
    main()
