"""Calibrate the question–passage relevance threshold on the Q/A sets (prints the PR curve).

For every question of each set in ``bench/data``, the offline answerer over that
set's corpus returns its best passages, exactly as the chaperone asks for them
(what the learner would consider storing). A passage *holds an answer* when it
contains one of the question's verified answer strings. For each threshold t
the script does what the learner does — keeps the passages with relevance ≥ t
and calls the question a success when it kept any — and prints:

* precision — the share of successes whose kept passages hold an answer (the
  judge's precision),
* recall — the share of the questions with an answer among the returned
  passages that are successes with an answer kept,

and the smallest threshold whose precision is at least the target (0.9) on
every set. ``sentient_core.relevance.RELEVANT`` is set from this output.

Run from a checkout with the package installed::

    python bench/calibrate_relevance.py [--k 3] [--target 0.9] [--json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from sentient_core.evaluation.qa import load_qa, normalize
from sentient_core.learning.chaperone import Chaperone
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.splitting import with_heading
from sentient_core.relevance import RELEVANT, TermStats, relevance

DATA = Path(__file__).resolve().parent / "data"
SETS = ("pydoc", "debian")
THRESHOLDS = np.round(np.arange(0.30, 1.001, 0.05), 2)
# What the chaperone asks the offline answerer for (its defaults).
_DEFAULTS = Chaperone.__init__.__kwdefaults__ or {}
ANSWER_K = int(_DEFAULTS.get("answer_k", 3))
ANSWER_MIN_SCORE = float(_DEFAULTS.get("min_score", 0.12))


def questions_of(name: str, k: int) -> list[list[tuple[float, bool]]]:
    """Per question: (relevance, holds-an-answer) of each passage the answerer returns."""
    items = load_qa(DATA / name / "qa.json")
    answerer = CorpusAnswerer([DATA / name / "corpus"], include_python_docs=False)
    stats = TermStats(answerer.passages)
    out = []
    for item in items:
        answers = [normalize(a) for a in item.answers]
        answer = answerer.answer(item.q, k=k, min_score=ANSWER_MIN_SCORE)
        # Each passage as the learner stores and judges it: under its section heading.
        shown = [with_heading(h, p) for h, p in zip(answer.headings, answer.passages, strict=True)]
        out.append(
            [(relevance(item.q, p, stats), any(a in normalize(p) for a in answers)) for p in shown]
        )
    return out


def curve(questions: list[list[tuple[float, bool]]]) -> list[dict]:
    answerable = sum(any(hit for _, hit in q) for q in questions)
    out = []
    for t in THRESHOLDS:
        kept = [[hit for r, hit in q if r >= t - 1e-12] for q in questions]
        successes = [k for k in kept if k]
        good = sum(any(k) for k in successes)
        out.append(
            {
                "threshold": float(t),
                "kept": len(successes),
                "precision": good / len(successes) if successes else float("nan"),
                "recall": good / max(answerable, 1),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--k", type=int, default=ANSWER_K, help=f"passages per question (default {ANSWER_K})"
    )
    parser.add_argument("--target", type=float, default=0.9, help="precision wanted (0.9)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    curves = {name: curve(questions_of(name, args.k)) for name in SETS}
    ok = [
        t
        for i, t in enumerate(THRESHOLDS)
        if all(c[i]["kept"] and c[i]["precision"] >= args.target for c in curves.values())
    ]
    chosen = float(ok[0]) if ok else None
    if args.json:
        print(json.dumps({"curves": curves, "chosen": chosen, "current": RELEVANT}, indent=2))
        return
    for name, c in curves.items():
        print(f"{name}: threshold  successes  precision  recall")
        for row in c:
            print(
                f"  {row['threshold']:9.2f} {row['kept']:5d} {row['precision']:10.3f}"
                f" {row['recall']:7.3f}"
            )
    print(f"smallest threshold with precision >= {args.target} on every set: {chosen}")
    print(f"sentient_core.relevance.RELEVANT = {RELEVANT}")


if __name__ == "__main__":
    main()
