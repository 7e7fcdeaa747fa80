"""Prefix-stable recall (issue 22): under every rank, the top-k list is a prefix of the
top-(k+1) list on the same store — over random stores, queries and k, including k past
the scored rank's re-rank pool, duplicate texts (ties) and queries sharing no word."""

from __future__ import annotations

import tempfile

import numpy as np

from sentient_core.core import Core
from sentient_core.metamemory.recall import RERANK_POOL
from sentient_core.recall import RANKS

VOCAB = [
    "tide",
    "moon",
    "sun",
    "orbit",
    "gravity",
    "bee",
    "dance",
    "flower",
    "magma",
    "basalt",
    "volcano",
    "curl",
    "gzip",
    "bash",
    "package",
    "version",
    "release",
    "fixed",
    "security",
    "overflow",
    "buffer",
    "header",
    "parser",
    "socket",
    "thread",
    "lock",
    "queue",
    "stream",
    "decode",
    "encode",
    "archive",
    "deflate",
    "signal",
    "handler",
    "exit",
    "status",
    "shell",
]


def _text(rng: np.random.Generator, n: int) -> str:
    # Zipf-like word choice: some words common, most rare, so BM25 and the re-rank
    # both have something to tell apart.
    p = 1.0 / np.arange(1, len(VOCAB) + 1)
    words = rng.choice(VOCAB, size=n, p=p / p.sum())
    return " ".join(words) + "."


def _store(path, rng: np.random.Generator) -> list[str]:
    texts = [_text(rng, int(rng.integers(4, 30))) for _ in range(int(rng.integers(30, 90)))]
    texts += texts[: int(rng.integers(0, 5))]  # exact duplicates: ties in every rank
    with Core(path) as core:
        for i, t in enumerate(texts):
            core.memory.store(t + f" note {i}", source=f"local:/c/{i % 7}.txt")
    return texts


def test_every_top_k_is_a_prefix_of_the_top_k_plus_one():
    cases = violations = 0
    for seed in range(4):
        rng = np.random.default_rng(seed)
        with tempfile.TemporaryDirectory() as d:
            texts = _store(d, rng)
            with Core(d, readonly=True) as core:
                for _ in range(260):
                    pick = rng.random()
                    if pick < 0.6:
                        q = " ".join(rng.choice(VOCAB, size=int(rng.integers(1, 5))))
                    elif pick < 0.9:
                        t = texts[int(rng.integers(len(texts)))].split()
                        q = " ".join(t[: int(rng.integers(1, len(t) + 1))])
                    else:
                        q = "zebra quagga"  # shares no word: cosine alone decides
                    k = int(rng.integers(1, RERANK_POOL + 6))
                    cases += 1
                    for rank in RANKS:
                        short = [h.record.id for h in core.recall(q, k, rank=rank)]
                        longer = [h.record.id for h in core.recall(q, k + 1, rank=rank)]
                        if longer[: len(short)] != short:
                            violations += 1
    assert cases >= 1000
    assert violations == 0
