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

A second curve, at ``RELEVANT``, is over the answerer's *margin* (how far its best
passage's ranking key beats the best candidate it did not give): a success also
needs margin ≥ m, as the judge asks of ``DECISIVE``. Each row is also computed on
the odd and the even questions alone (a threshold read off one half holds on
the other, or it is fitted to noise). Last, every (relevance, margin) pair of
the two grids, ranked by its worst recall over the sets among the pairs whose
precision reaches the target on every set *and* on each half.

How the defaults were read off it: relevance alone reaches 0.9 on no threshold
for pydoc; with the margin, recall is the same for every relevance ≤ 0.5, and
``RELEVANT = 0.5`` is the strictest of those. The grid's best margin is 0.2,
but in the learn runs (``cli.py evaluate``: the judge precision the target is
about) 0.2 gives 0.906 on pydoc, one wrong verdict from the target, and 0.3
gives 0.927: ``DECISIVE = 0.3``.

Run from a checkout with the package installed::

    python bench/calibrate_relevance.py [--k 3] [--target 0.9] [--json]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sentient_core.evaluation.qa import load_qa, normalize
from sentient_core.learning.chaperone import Chaperone
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.splitting import with_heading
from sentient_core.relevance import DECISIVE, RELEVANT, TermStats, relevance

DATA = Path(__file__).resolve().parent / "data"
SETS = ("pydoc", "debian")
THRESHOLDS = np.round(np.arange(0.30, 1.001, 0.05), 2)
MARGINS = np.round(np.arange(0.0, 0.601, 0.05), 2)
# What the chaperone asks the offline answerer for (its defaults).
_DEFAULTS = Chaperone.__init__.__kwdefaults__ or {}
ANSWER_K = int(_DEFAULTS.get("answer_k", 3))
ANSWER_MIN_SCORE = float(_DEFAULTS.get("min_score", 0.12))


def questions_of(name: str, k: int) -> tuple[list[list[tuple[float, bool]]], list[float]]:
    """Per question: (relevance, holds-an-answer) of each passage the answerer returns;
    and the answer's margin."""
    items = load_qa(DATA / name / "qa.json")
    answerer = CorpusAnswerer([DATA / name / "corpus"], include_python_docs=False)
    stats = TermStats(answerer.passages)
    out, margins = [], []
    for item in items:
        answers = [normalize(a) for a in item.answers]
        answer = answerer.answer(item.q, k=k, min_score=ANSWER_MIN_SCORE)
        # Each passage as the learner stores and judges it: under its section heading.
        shown = [with_heading(h, p) for h, p in zip(answer.headings, answer.passages, strict=True)]
        out.append(
            [(relevance(item.q, p, stats), any(a in normalize(p) for a in answers)) for p in shown]
        )
        margins.append(answer.margin if answer.margin is not None else 0.0)
    return out, margins


def counts(
    questions: list[list[tuple[float, bool]]],
    margins: list[float],
    idx: Sequence[int],
    relevant: float,
    margin: float,
) -> tuple[int, int, int]:
    """(successes, successes holding an answer, questions with an answer returned) over
    the questions ``idx`` when a success keeps passages with relevance ≥ ``relevant``
    of an answer with margin ≥ ``margin``."""
    answerable = sum(any(hit for _, hit in questions[i]) for i in idx)
    kept = [
        [hit for r, hit in questions[i] if r >= relevant - 1e-12]
        for i in idx
        if margins[i] >= margin - 1e-12
    ]
    successes = [k for k in kept if k]
    return len(successes), sum(any(k) for k in successes), answerable


def _halves(n: int) -> dict[str, range]:
    return {"all": range(n), "odd": range(1, n, 2), "even": range(0, n, 2)}


def margin_curve(questions: list[list[tuple[float, bool]]], margins: list[float]) -> list[dict]:
    """Successes at RELEVANT that also have margin ≥ m: all questions, odd, even."""
    out = []
    for m in MARGINS:
        r: dict = {"margin": float(m)}
        for half, idx in _halves(len(questions)).items():
            kept, good, answerable = counts(questions, margins, idx, RELEVANT, float(m))
            r[half] = {
                "kept": kept,
                "precision": good / kept if kept else float("nan"),
                "recall": good / max(answerable, 1),
            }
        out.append(r)
    return out


def curve(questions: list[list[tuple[float, bool]]]) -> list[dict]:
    n = len(questions)
    out = []
    for t in THRESHOLDS:
        kept, good, answerable = counts(questions, [0.0] * n, range(n), float(t), 0.0)
        out.append(
            {
                "threshold": float(t),
                "kept": kept,
                "precision": good / kept if kept else float("nan"),
                "recall": good / max(answerable, 1),
            }
        )
    return out


def joint(asked: dict[str, tuple[list, list[float]]], target: float) -> list[dict]:
    """(relevance, margin) pairs with precision ≥ target on every set and half, best
    worst-set recall first (ties: the stricter relevance, then margin, first)."""
    out = []
    for t in THRESHOLDS:
        for m in MARGINS:
            worst_p, worst_r = 1.0, 1.0
            for questions, margins in asked.values():
                for half, idx in _halves(len(questions)).items():
                    kept, good, answerable = counts(questions, margins, idx, t, m)
                    worst_p = min(worst_p, good / kept if kept else 0.0)
                    if half == "all":
                        worst_r = min(worst_r, good / max(answerable, 1))
            if worst_p >= target:
                out.append(
                    {
                        "relevance": float(t),
                        "margin": float(m),
                        "precision": worst_p,
                        "recall": worst_r,
                    }
                )
    return sorted(out, key=lambda r: (-r["recall"], -r["relevance"], r["margin"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--k", type=int, default=ANSWER_K, help=f"passages per question (default {ANSWER_K})"
    )
    parser.add_argument("--target", type=float, default=0.9, help="precision wanted (0.9)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    asked = {name: questions_of(name, args.k) for name in SETS}
    curves = {name: curve(q) for name, (q, _) in asked.items()}
    margins = {name: margin_curve(q, m) for name, (q, m) in asked.items()}
    pairs = joint(asked, args.target)
    ok = [
        t
        for i, t in enumerate(THRESHOLDS)
        if all(c[i]["kept"] and c[i]["precision"] >= args.target for c in curves.values())
    ]
    chosen = float(ok[0]) if ok else None
    if args.json:
        print(
            json.dumps(
                {
                    "curves": curves,
                    "chosen": chosen,
                    "current": RELEVANT,
                    "margin_curves": margins,
                    "decisive": DECISIVE,
                    "pairs": pairs,
                },
                indent=2,
            )
        )
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
    for name, c in margins.items():
        print(
            f"{name} at relevance {RELEVANT}: margin  successes  precision  recall   (odd | even)"
        )
        for row in c:
            a, o, e = row["all"], row["odd"], row["even"]
            print(
                f"  {row['margin']:14.2f} {a['kept']:5d} {a['precision']:10.3f} {a['recall']:7.3f}"
                f"   ({o['precision']:.3f} {o['recall']:.3f} | {e['precision']:.3f}"
                f" {e['recall']:.3f})"
            )
    print(f"sentient_core.relevance.DECISIVE = {DECISIVE}")
    print(f"(relevance, margin) pairs with precision >= {args.target} on every set and half:")
    print("  relevance  margin  worst precision  worst recall")
    for r in pairs[:8]:
        print(
            f"  {r['relevance']:9.2f} {r['margin']:7.2f} {r['precision']:16.3f} {r['recall']:13.3f}"
        )


if __name__ == "__main__":
    main()
