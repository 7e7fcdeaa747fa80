"""Does the judge's signal tell answers from mentions? Relevance and focus on labelled passages.

For every question of the Q/A sets in ``bench/data`` (pydoc, debian, and the
harder debian set), the offline answerer over the set's corpus returns its best
``--k`` passages, each under its heading, as the chaperone would hand them to
the judge. A passage is labelled *answer* when it holds one of the question's
verified answer strings, else *mention* (it was ranked for the question's words
but does not answer it). For each score — :func:`~sentient_core.relevance.relevance`
(the calibrated gate), :func:`~sentient_core.relevance.focus` (how much of the
passage is about the question) and their product — the script prints:

* AUC: the probability that a random answer passage scores above a random
  mention (ties count half); 0.5 is no signal, 1.0 a perfect split;
* the quartiles on answer passages: a score that reads 1.00 for most answers
  carries no grade.

Run from a checkout::

    python bench/relevance_spread.py [--k 5] [--json]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sentient_core.evaluation.qa import first_answer, load_qa
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.splitting import with_heading
from sentient_core.relevance import TermStats, focus, relevance

DATA = Path(__file__).resolve().parent / "data"
SETS = {
    "pydoc": (DATA / "pydoc" / "qa.json", DATA / "pydoc" / "corpus"),
    "debian": (DATA / "debian" / "qa.json", DATA / "debian" / "corpus"),
    "debian-hard": (DATA / "debian" / "hard.json", DATA / "debian" / "corpus"),
}
SCORES = ("relevance", "focus", "relevance x focus")


def auc(answers: Sequence[float], mentions: Sequence[float]) -> float:
    """P(answer > mention) + ½ P(tie) over every pair; NaN when a side is empty."""
    a, m = np.asarray(answers, dtype=float), np.asarray(mentions, dtype=float)
    if not a.size or not m.size:
        return float("nan")
    return float((a[:, None] > m[None, :]).mean() + 0.5 * (a[:, None] == m[None, :]).mean())


def scored(qa: Path, corpus: Path, k: int) -> dict[str, tuple[list[float], list[float]]]:
    """Per score: (its values on answer passages, on mentions)."""
    answerer = CorpusAnswerer([corpus], include_python_docs=False)
    stats = TermStats(answerer.passages)
    out: dict[str, tuple[list[float], list[float]]] = {s: ([], []) for s in SCORES}
    for item in load_qa(qa):
        answer = answerer.answer(item.q, k=k, min_score=0.12)
        for heading, passage in zip(answer.headings, answer.passages, strict=True):
            shown = with_heading(heading, passage)
            side = 0 if first_answer(shown, item.answers) is not None else 1
            r, f = relevance(item.q, shown, stats), focus(item.q, shown, stats)
            for name, value in zip(SCORES, (r, f, r * f), strict=True):
                out[name][side].append(value)
    return out


def table(k: int) -> dict[str, dict[str, dict[str, object]]]:
    """``{set: {score: {auc, answers, mentions, quartiles}}}``."""
    result: dict[str, dict[str, dict[str, object]]] = {}
    for name, (qa, corpus) in SETS.items():
        result[name] = {}
        for score, (answers, mentions) in scored(qa, corpus, k).items():
            quartiles = np.percentile(answers, [0, 25, 50, 75, 100]) if answers else []
            result[name][score] = {
                "auc": auc(answers, mentions),
                "answers": len(answers),
                "mentions": len(mentions),
                "quartiles": [round(float(x), 3) for x in quartiles],
            }
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=5, help="passages per question (default 5)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    t = table(args.k)
    if args.json:
        print(json.dumps(t, indent=2))
        return 0
    print(
        f"{'set':<12} {'score':<18} {'AUC':>6} {'answers':>8} {'mentions':>9}  answers' quartiles"
    )
    for name, rows in t.items():
        for score, row in rows.items():
            q = " / ".join(f"{x:.2f}" for x in row["quartiles"])  # type: ignore[union-attr]
            print(
                f"{name:<12} {score:<18} {row['auc']:>6.3f} {row['answers']:>8} {row['mentions']:>9}  {q}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
