"""The near-duplicate threshold: shared 5-word shingles against passages known to repeat.

Labelled pairs from real text nobody here wrote (Python's documentation in
``bench/data/pydoc/corpus``), labels from where the texts come from, never from
the detector:

positive   the same stretch of a document chunked twice, the second chunk shifted
           by 2–20 % of its length (at least 80 % of it is the same text), and the
           same chunk with its whitespace and line breaks redone
negative   two chunks of one document overlapping by at most half (shifted by
           50–100 %: the next passage, or one half the same), and each chunk with
           its most similar chunk of *another* document (by code cosine) unless
           difflib finds them ≥ 80 % alike (then it is a positive: pydoc repeats
           some sections under two topics)

For each threshold it prints precision and recall of ``shared_shingles ≥
threshold`` (:func:`sentient_core.analysis.shared_shingles`), and the threshold
memory uses (``sentient_core.memory.types.NEAR_SHINGLES``): the lowest with
precision ≥ 0.95.

    PYTHONPATH=. python bench/near_duplicates.py [--chunks 400] [--seed 0]
"""

from __future__ import annotations

import argparse
import difflib
import random
import re
from pathlib import Path

import numpy as np

from sentient_core.analysis import shared_shingles, shingles
from sentient_core.encoder import get_encoder

CORPUS = Path(__file__).resolve().parent / "data" / "pydoc" / "corpus"
CHUNK = 2000  # the ingest chunk size
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def labelled_pairs(n_chunks: int, seed: int) -> list[tuple[str, str, bool, str]]:
    """(a, b, near-duplicate?, how the pair was made)."""
    rng = random.Random(seed)
    docs = [p.read_text(errors="replace") for p in sorted(CORPUS.glob("*.txt"))]
    docs = [d for d in docs if len(d) >= 2 * CHUNK]
    chunks: list[tuple[int, int]] = []
    for _ in range(n_chunks):
        d = rng.randrange(len(docs))
        chunks.append((d, rng.randrange(0, len(docs[d]) - CHUNK)))
    pairs = []
    for d, start in chunks:
        text = docs[d]
        a = text[start : start + CHUNK]
        near = rng.uniform(0.02, 0.20)
        far = rng.uniform(0.50, 1.00)
        for shift, label, how in ((near, True, "shifted 2-20%"), (far, False, "shifted 50-100%")):
            s = min(len(text) - CHUNK, start + int(shift * CHUNK))
            b = text[s : s + CHUNK]
            if label and (s - start) > 0.2 * CHUNK:
                continue  # the document ended: not a clean positive
            pairs.append((a, b, label, how))
        wrapped = re.sub(r"\s+", lambda m: rng.choice((" ", "\n", "  ")), a)
        pairs.append((a, wrapped, True, "rewrapped"))
    # Hard negatives: each chunk and its nearest chunk of another document.
    enc = get_encoder("token", code_dim=256)
    texts = [docs[d][s : s + CHUNK] for d, s in chunks]
    codes = enc.encode_batch(texts).astype(np.float64)
    codes /= np.maximum(np.linalg.norm(codes, axis=1, keepdims=True), 1e-12)
    sims = codes @ codes.T
    for i, (d, _) in enumerate(chunks):
        others = [j for j in range(len(chunks)) if chunks[j][0] != d]
        if not others:
            continue
        j = max(others, key=lambda j: sims[i, j])
        alike = difflib.SequenceMatcher(None, texts[i], texts[j], autojunk=False).ratio() >= 0.8
        pairs.append((texts[i], texts[j], alike, "nearest other document"))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pairs = labelled_pairs(args.chunks, args.seed)
    scores = [shared_shingles(shingles(a), shingles(b)) for a, b, _, _ in pairs]
    labels = [lab for _, _, lab, _ in pairs]
    kinds: dict[str, int] = {}
    for _, _, lab, how in pairs:
        kinds[f"{how} ({'near' if lab else 'not'})"] = (
            kinds.get(f"{how} ({'near' if lab else 'not'})", 0) + 1
        )
    print(
        f"{len(pairs)} labelled pairs: {sum(labels)} near-duplicates; "
        + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    )
    print("threshold  precision  recall")
    chosen = None
    for t in THRESHOLDS:
        hit = [s >= t for s in scores]
        tp = sum(h and lab for h, lab in zip(hit, labels, strict=True))
        fp = sum(h and not lab for h, lab in zip(hit, labels, strict=True))
        fn = sum(lab and not h for h, lab in zip(hit, labels, strict=True))
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 1.0
        print(f"{t:9.2f}  {precision:9.3f}  {recall:6.3f}")
        if chosen is None and precision >= 0.95:
            chosen = t
    print(f"lowest threshold with precision >= 0.95: {chosen}")


if __name__ == "__main__":
    main()
