"""A deterministic generated corpus for profiling and benchmarks.

Text is real English prose: sentences sampled (seeded) from the documentation
that ships with Python (``pydoc_data.topics``), written into .txt, .md, .html
and .json files, so every extractor is exercised and no network is needed.
"""

from __future__ import annotations

import json
import random
import re
from html import escape
from pathlib import Path

from sentient_core.errors import ArgumentError

__all__ = ["generate_corpus", "sentences"]

_KINDS = ("txt", "md", "html", "json")


def sentences() -> list[str]:
    """Sentences of the pydoc topics, in a fixed order."""
    from pydoc_data.topics import topics

    out: list[str] = []
    for name in sorted(topics):
        text = re.sub(r"\s+", " ", topics[name])
        out.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 20)
    return out


def _paragraphs(rng: random.Random, pool: list[str], n_chars: int) -> list[str]:
    paras: list[str] = []
    total = 0
    while total < n_chars:
        para = " ".join(rng.choice(pool) for _ in range(rng.randint(3, 8)))
        paras.append(para)
        total += len(para) + 2
    return paras


def generate_corpus(
    folder: str | Path, size_bytes: int = 20_000_000, *, file_bytes: int = 200_000, seed: int = 0
) -> list[Path]:
    """Write about ``size_bytes`` of text files into ``folder``; return their paths.

    Parameters
    ----------
    folder : path
        Created if missing.
    size_bytes : int
        Approximate total text size.
    file_bytes : int
        Approximate size of each file.
    seed : int
        Same seed, same files.
    """
    if size_bytes <= 0 or file_bytes <= 0:
        raise ArgumentError("size_bytes and file_bytes must be positive")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    pool = sentences()
    paths: list[Path] = []
    written = 0
    i = 0
    while written < size_bytes:
        kind = _KINDS[i % len(_KINDS)]
        paras = _paragraphs(rng, pool, min(file_bytes, size_bytes - written))
        title = f"Generated document {i}"
        if kind == "txt":
            body = title + "\n\n" + "\n\n".join(paras) + "\n"
        elif kind == "md":
            body = f"# {title}\n\n" + "\n\n".join(paras) + "\n"
        elif kind == "html":
            body = (
                f"<html><head><title>{escape(title)}</title></head><body>"
                + "".join(f"<p>{escape(p)}</p>" for p in paras)
                + "</body></html>"
            )
        else:
            body = json.dumps({"title": title, "paragraphs": paras}, indent=1)
        path = folder / f"doc{i:05d}.{kind}"
        path.write_text(body, encoding="utf-8")
        written += len(body.encode())
        paths.append(path)
        i += 1
    return paths
