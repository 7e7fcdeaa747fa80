"""sentient_kernels.keyword_pick: the kept words equal decoding every span and testing it
with ``str.isdigit`` (the obviously-correct reference below), and the token encoder's
keywords equal its per-text path."""

from __future__ import annotations

import numpy as np
import pytest

from sentient_core.encoder import get_encoder
from sentient_core.encoder import token_encoder as te
from sentient_kernels import keyword_pick
from sentient_kernels import text as text_kernels
from tests.test_text import random_texts


def naive_pick(data: bytes, starts, ends, n_used, k):
    """Per text: ("words", list), or the status the kernel must give instead."""
    out = []
    n_cand = starts.shape[1]
    for t in range(starts.shape[0]):
        top, state = [], keyword_pick.KEPT
        for c in range(n_used[t]):
            if len(top) == k:
                break
            raw = data[starts[t, c] : ends[t, c]]
            if not raw or any(x >= 0x80 or x < 2 for x in raw):
                state = keyword_pick.CALLER_TESTS
                break
            word = raw.decode()
            if not word.isdigit():
                top.append(word)
        if state == keyword_pick.KEPT and len(top) < k and n_used[t] == n_cand:
            state = keyword_pick.CALLER_RANKS
        out.append((state, top if state == keyword_pick.KEPT else []))
    return out


def random_spans(seed: int, n: int, n_cand: int):
    rng = np.random.default_rng(seed)
    pool = ["tide", "42", "2024", "moon", "7", "x", "café", "٣", "²", "ab1", "\x01a", "", "q"]
    # Mostly ASCII, numbers common: every status comes up.
    weight = np.array([4, 8, 8, 2, 8, 2, 1, 1, 1, 2, 0.5, 0.5, 1])
    words, spans = [], []
    pos = 0
    for _ in range(n):
        row = []
        for _ in range(n_cand):
            w = pool[rng.choice(len(pool), p=weight / weight.sum())].encode()
            row.append((pos, pos + len(w)))
            words.append(w)
            pos += len(w) + 1
            words.append(b" ")
        spans.append(row)
    data = b"".join(words)
    arr = np.array(spans, dtype=np.int64).reshape(n, n_cand, 2)
    n_used = rng.integers(0, n_cand + 1, size=n).astype(np.int64)
    return data, np.ascontiguousarray(arr[..., 0]), np.ascontiguousarray(arr[..., 1]), n_used


@pytest.mark.parametrize(("seed", "n_cand", "k"), [(0, 6, 3), (1, 10, 8), (2, 4, 0), (3, 1, 1)])
def test_equals_decoding_each_span(seed, n_cand, k):
    data, starts, ends, n_used = random_spans(seed, 300, n_cand)
    words, status = keyword_pick.pick(np.frombuffer(data, np.uint8), starts, ends, n_used, k)
    parts = words.tobytes().decode().split("\x01")
    assert parts[-1] == "" and len(parts) == starts.shape[0] + 1
    want = naive_pick(data, starts, ends, n_used, k)
    assert status.tolist() == [s for s, _ in want]
    got = [p.split("\x00") if p else [] for p in parts[:-1]]
    assert got == [w for _, w in want]
    assert {*status.tolist()} >= ({0, 1, 2} if k else {0})  # every path taken


def test_empty_batch_and_bad_arguments():
    empty = np.zeros((0, 3), np.int64)
    words, status = keyword_pick.pick(np.zeros(0, np.uint8), empty, empty, np.zeros(0, np.int64), 2)
    assert words.size == 0 and status.size == 0
    buf = np.frombuffer(b"tide moon", np.uint8)
    s, e, u = np.array([[0, 5]]), np.array([[4, 9]]), np.array([2])
    with pytest.raises(ValueError, match="within buf"):
        keyword_pick.pick(buf, s, np.array([[4, 10]]), u, 1)
    with pytest.raises(ValueError, match="n_used"):
        keyword_pick.pick(buf, s, e, np.array([3]), 1)
    with pytest.raises(ValueError, match="k"):
        keyword_pick.pick(buf, s, e, u, -1)
    with pytest.raises(TypeError):
        keyword_pick.pick(buf, s.astype(np.int32), e, u, 1)


def test_encoder_keywords_equal_the_per_text_path():
    texts = [
        *random_texts(4, 60),
        "2024 2024 2024 1999 1999 42 42 7 7 tide",  # numbers crowd the candidates out
        "١٢٣ ١٢٣ ١٢٣ café café moon",  # Unicode digits: judged by str.isdigit
        "",
        "Straße STRASSE straße",
    ]
    enc = get_encoder("token")
    joined = b"".join(te.lowered_utf8(texts))
    for k in (0, 3, 8):
        n_cand = 2 * k + 8
        got = enc.analyse_many(texts, k).keywords
        assert enc.keywords_many(texts, k) == got
        buf = np.frombuffer(joined, np.uint8)
        starts, ends, used = text_kernels.keywords(
            buf,
            np.cumsum([0, *map(len, te.lowered_utf8(texts))]).astype(np.int64),
            te.WORD_TABLE.bmp,
            te.STOP_TABLE,
            te.MIN_TOKEN_CHARS,
            te.MAX_TOKEN_CHARS,
            n_cand,
        )
        want = [
            te._text_keywords(
                texts[t],
                joined,
                zip(starts[t, : used[t]].tolist(), ends[t, : used[t]].tolist(), strict=True),
                int(used[t]),
                k,
                n_cand,
            )
            for t in range(len(texts))
        ]
        assert got == want


def test_encoder_analysis_does_not_depend_on_its_threads():
    texts = [*random_texts(6, 50), "", "tide " * 400]
    enc = get_encoder("token")
    one = enc.analyse_many(texts, 8, threads=1)
    for threads in (0, 2, 5):
        got = enc.analyse_many(texts, 8, threads=threads)
        assert got.keywords == one.keywords and got.dominant == one.dominant
        for name in ("codes", "offsets", "indices", "amounts", "phases", "n_tokens"):
            np.testing.assert_array_equal(getattr(got.batch, name), getattr(one.batch, name))
        for name in ("offsets", "terms", "tfs", "lengths"):
            np.testing.assert_array_equal(getattr(got.terms, name), getattr(one.terms, name))
    with pytest.raises(ValueError, match="threads"):
        enc.analyse_many(texts, 8, threads=-1)
