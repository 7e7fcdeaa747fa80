"""How often the offline answerer's own passages hold a Q/A set's answer.

    python bench/offline_answers.py bench/data/pydoc/qa.json bench/data/pydoc/corpus

For every question, ``CorpusAnswerer([corpus], include_python_docs=False)
.answer(q, k=5, min_score=...)``; top-1 = the first passage holds an answer
string (case-insensitive, whitespace-normalised, as ``evaluate``), top-5 = any
of the five does. Reported at ``min_score`` 0 (the ranking alone) and at the
chaperone's default 0.12, for each rank the answerer offers (an answerer
without a ``rank`` option is reported as "default"), with and without the
re-ranking by the judge's relevance (``rerank``), all in one run.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import time

from sentient_core.evaluation.qa import first_answer, load_qa
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.splitting import with_heading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("qa")
    parser.add_argument("corpus")
    parser.add_argument("-k", type=int, default=5)
    args = parser.parse_args()
    items = load_qa(args.qa)
    has_rank = "rank" in inspect.signature(CorpusAnswerer).parameters
    has_rerank = "rerank" in inspect.signature(CorpusAnswerer).parameters
    ranks = ("bm25", "hybrid") if has_rank else ("default",)
    reranks = (False, True) if has_rerank else (None,)
    print(f"{args.qa}: {len(items)} questions, corpus {args.corpus}, k={args.k}")
    print(f"{'rank':8s} {'rerank':>6s} {'min_score':>9s} {'top-1':>6s} {'top-5':>6s} {'ms/q':>6s}")
    for rank, rerank in itertools.product(ranks, reranks):
        kw: dict = {"rank": rank} if has_rank else {}
        if rerank is not None:
            kw["rerank"] = rerank
        answerer = CorpusAnswerer([args.corpus], include_python_docs=False, **kw)
        for min_score in (0.0, 0.12):
            top1 = topk = 0
            t0 = time.perf_counter()
            for item in items:
                ans = answerer.answer(item.q, k=args.k, min_score=min_score)
                # Each passage as the learner stores it: under its section heading.
                shown = [
                    with_heading(h, p) for h, p in zip(ans.headings, ans.passages, strict=True)
                ]
                found = [first_answer(p, item.answers) is not None for p in shown]
                top1 += bool(found[:1] and found[0])
                topk += any(found)
            ms = (time.perf_counter() - t0) * 1e3 / max(1, len(items))
            n = len(items)
            shown_rerank = "-" if rerank is None else ("yes" if rerank else "no")
            print(
                f"{rank:8s} {shown_rerank:>6s} {min_score:9.2f} {top1 / n:6.3f} {topk / n:6.3f}"
                f" {ms:6.2f}"
            )


if __name__ == "__main__":
    main()
