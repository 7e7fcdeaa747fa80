"""sentient_kernels.spaces and the batch content digests built on it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sentient_core.store import content
from sentient_kernels import spaces

SPACE_CP = content._SPACE_CP
WHITESPACE = [chr(c) for c in range(0x110000) if chr(c).isspace()]
PIECES = [*WHITESPACE, "a", "é", "日本", "😀", "\ud800", "word", ".", "\x00", "  "]


def joined(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    parts = [t.encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    return np.frombuffer(b"".join(parts), dtype=np.uint8), offsets


def random_texts(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(PIECES, size=int(rng.integers(0, 30)))) for _ in range(n)]


def test_the_table_holds_every_whitespace_code_point():
    assert max(ord(c) for c in WHITESPACE) < SPACE_CP.size
    assert [chr(c) for c in np.flatnonzero(SPACE_CP)] == WHITESPACE
    # str.split and the regex \s agree on what whitespace is (html_text relies on it too).
    assert all(re.fullmatch(r"\s", c) for c in WHITESPACE)


@pytest.mark.parametrize("seed", range(4))
def test_collapse_equals_split_and_join(seed):
    texts = [*random_texts(seed, 200), "", " ", " a ", "\u3000x\u2028y\x1c"]
    buf, offsets = joined(texts)
    out, spans = spaces.collapse_spaces(buf, offsets, SPACE_CP)
    for t, text in enumerate(texts):
        want = " ".join(text.split()).encode("utf-8", "surrogatepass")
        assert out[spans[t] : spans[t + 1]].tobytes() == want


def test_batch_digests_equal_one_by_one():
    texts = [*random_texts(7, 300), "same  words", "same words", ""]
    assert content.digests(texts) == [content.digest(t) for t in texts]
    assert content.digests([]) == []


def test_rejects_bad_arguments():
    buf, offsets = joined(["a b"])
    with pytest.raises(ValueError, match="offsets"):
        spaces.collapse_spaces(buf, np.array([0, 9], dtype=np.int64), SPACE_CP)
    with pytest.raises(ValueError, match="UTF-8"):
        spaces.collapse_spaces(np.array([0xE6], np.uint8), np.array([0, 1]), SPACE_CP)
    with pytest.raises(ValueError, match="character boundaries"):
        b2, _ = joined(["é"])
        spaces.collapse_spaces(b2, np.array([1, 2], dtype=np.int64), SPACE_CP)
    with pytest.raises(ValueError, match="space_cp"):
        spaces.collapse_spaces(buf, offsets, np.zeros(10, np.bool_))
