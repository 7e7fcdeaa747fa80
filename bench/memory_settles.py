"""How often "memory already answers it" is right: the check curiosity can use to
settle a question without asking it (``CuriosityConfig.memory_settles``), on a Q/A set.

    python bench/memory_settles.py bench/data/pydoc/qa.json bench/data/pydoc/corpus

Runs ``evaluate``'s learn mode on a fresh temporary store, so memory holds what
the learner stored for these very questions (the case most favourable to the
check), then asks memory each question as curiosity's probe does: the top 3
BM25 hits (``touch=False``), the best of them by the judge's relevance check
(term statistics of the same corpus). A question is *settled* when that
relevance reaches the threshold; it is *right* when the settling trace holds
one of the question's answers (as ``evaluate`` matches them). Printed per
relevance threshold, and at the judge's ``RELEVANT`` per ranking margin (the
best hit's score + relevance over the fourth's, as the judge's ``DECISIVE``
reads the answerer's ranking): settled, right, precision, and recall over the
questions whose settling trace would be right at any threshold.

Measured on the shipped sets: precision 0.74 (pydoc) and 0.95 (debian) at 0.5,
at most 0.86 (pydoc) for any threshold or margin — why the learner asks every
question (``memory_settles="none"``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from sentient_core.core import Core
from sentient_core.evaluation.qa import first_answer, load_qa
from sentient_core.evaluation.run import run_learn
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.relevance import RELEVANT, relevance

THRESHOLDS = (0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
MARGINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def table(rows: list[tuple[float, float, bool]], threshold: float, margin: float) -> dict:
    """Settled / right / precision / recall of ``(relevance, margin, right)`` rows."""
    settled = [right for rel, m, right in rows if rel >= threshold and m >= margin]
    right = sum(settled)
    possible = sum(r for _, _, r in rows)
    return {
        "settled": len(settled),
        "right": right,
        "precision": right / len(settled) if settled else float("nan"),
        "recall": right / possible if possible else float("nan"),
    }


def probe(store: Path, qa: str, corpus: str) -> list[tuple[float, float, bool]]:
    """(relevance of the best of the top 3, ranking margin, it holds an answer) per question."""
    items = load_qa(qa)
    stats = CorpusAnswerer([corpus], include_python_docs=False).term_stats()
    out = []
    with Core(store) as core:
        found = core.memory.recall_batch([it.q for it in items], k=4, touch=False, rank="bm25")
        for it, hits in zip(items, found, strict=True):
            if not hits:
                out.append((0.0, 0.0, False))
                continue
            rels = [relevance(it.q, h.record.text, stats) for h in hits]
            best = max(range(min(3, len(hits))), key=lambda i: (rels[i], -i))
            keys = sorted((h.score + r for h, r in zip(hits, rels, strict=True)), reverse=True)
            margin = keys[0] - (keys[3] if len(keys) > 3 else 0.0)
            right = first_answer(hits[best].record.text, it.answers) is not None
            out.append((rels[best], margin, right))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("qa")
    parser.add_argument("corpus")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        run_learn(load_qa(args.qa), args.corpus, 5, store)
        rows = probe(store, args.qa, args.corpus)
    print(f"{args.qa}: {len(rows)} questions; memory = evaluate's learn-mode store")
    print(
        f"{'relevance':>9s} {'margin':>6s} {'settled':>7s} {'right':>5s} {'precision':>9s} {'recall':>6s}"
    )
    cases = [(t, 0.0) for t in THRESHOLDS] + [(RELEVANT, m) for m in MARGINS[1:]]
    for threshold, margin in cases:
        r = table(rows, threshold, margin)
        print(
            f"{threshold:9.2f} {margin:6.2f} {r['settled']:7d} {r['right']:5d}"
            f" {r['precision']:9.3f} {r['recall']:6.3f}"
        )


if __name__ == "__main__":
    main()
