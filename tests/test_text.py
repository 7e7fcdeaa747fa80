"""sentient_kernels.text public functions against the pure-Python references in tests/naive_text.py."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from sentient_kernels import excitation, text, unchecked
from tests.naive import text as naive

# \w of Python's re over the BMP prefix the test texts use (as the encoder builds it).
WORD_CP = np.array([re.match(r"\w", chr(c)) is not None for c in range(0x3100)], dtype=np.bool_)
STOP_WORDS = ("the", "and", "of", "a", "to", "über")
STOP = {naive.token_hash(w.encode()) for w in STOP_WORDS}
STOP_TABLE = text.build_stop_table(STOP)

VOCABULARY = [
    "tide",
    "moon",
    "gravity",
    "water",
    "the",
    "and",
    "of",
    "naïve",
    "café",
    "über",
    "straße",
    "日本語",
    "中文",
    "x",
    "42",
    "3",
    "snake_case",
    "a" * 45,
    "é" * 12,
]
SEPARATORS = [" ", "  ", ", ", ". ", "\n", " — ", "😀", "\t", "!"]


def random_texts(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = rng.choice(VOCABULARY, size=int(rng.integers(0, 40)))
        seps = rng.choice(SEPARATORS, size=len(words))
        out.append("".join(f"{w}{s}" for w, s in zip(words, seps, strict=True)))
    return out


def batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    parts = [t.lower().encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    return np.frombuffer(b"".join(parts), dtype=np.uint8), offsets


# --------------------------------------------------------------------------- encode


@pytest.mark.parametrize(
    ("seed", "code_dim", "bigram_weight", "n_bank", "primes_per_token", "min_chars", "max_chars"),
    [
        (0, 256, 0.5, 64, 2, 2, 40),
        (1, 8, 0.0, 1, 2, 1, 100),
        (2, 64, 1.5, 7, 1, 3, 10),
        (3, 1, 0.5, 0, 1, 2, 40),
    ],
)
def test_encode_matches_reference(
    seed, code_dim, bigram_weight, n_bank, primes_per_token, min_chars, max_chars
):
    texts = [*random_texts(seed, 30), "", "the and of", "😀"]
    buf, offsets = batch(texts)
    codes, n_tokens, ex_re, ex_im = text.encode(
        buf,
        offsets,
        WORD_CP,
        STOP_TABLE,
        min_chars,
        max_chars,
        code_dim,
        bigram_weight=bigram_weight,
        n_bank=n_bank,
        primes_per_token=primes_per_token,
    )
    want_codes, want_tokens, want_sums = naive.encode(
        buf,
        offsets,
        WORD_CP,
        STOP,
        min_chars,
        max_chars,
        code_dim,
        bigram_weight,
        n_bank,
        primes_per_token,
    )
    assert codes.dtype == np.float32 and codes.shape == (len(texts), code_dim)
    np.testing.assert_array_equal(n_tokens, want_tokens)
    np.testing.assert_allclose(codes, want_codes, rtol=0.0, atol=1e-6)
    assert ex_re.shape == ex_im.shape == (len(texts), n_bank)
    np.testing.assert_allclose(ex_re, want_sums.real, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(ex_im, want_sums.imag, rtol=0.0, atol=1e-12)
    assert n_tokens.sum() > 0


def test_encode_equals_the_unchecked_kernel_bit_for_bit():
    buf, offsets = batch(random_texts(7, 20))
    got = text.encode(
        buf,
        offsets,
        WORD_CP,
        STOP_TABLE,
        2,
        40,
        32,
        bigram_weight=0.5,
        n_bank=5,
        primes_per_token=2,
    )
    n = offsets.shape[0] - 1
    want = (
        np.zeros((n, 32), np.float32),
        np.zeros(n, np.int64),
        np.zeros((n, 5)),
        np.zeros((n, 5)),
    )
    unchecked.text_encode(buf, offsets, WORD_CP, STOP_TABLE, 2, 40, 32, 0.5, 5, 2, True, *want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_offsets_may_select_part_of_the_buffer():
    buf, _ = batch(["tide moon tide water"])
    codes, n_tokens, _, _ = text.encode(
        buf, np.array([5, 9, 9], dtype=np.int64), WORD_CP, STOP_TABLE, 2, 40, 16
    )
    assert n_tokens.tolist() == [1, 0]
    assert np.abs(codes[0]).max() == 1.0 and not codes[1].any()


# --------------------------------------------------------------------------- keywords


@pytest.mark.parametrize("n_cand", [0, 1, 3, 50])
def test_keywords_match_reference(n_cand):
    texts = [*random_texts(11, 25), "", "tide tide moon moon water"]
    buf, offsets = batch(texts)
    starts, ends, counts = text.keywords(buf, offsets, WORD_CP, STOP_TABLE, 2, 40, n_cand)
    want = naive.keywords(buf, offsets, WORD_CP, STOP, 2, 40, n_cand)
    assert starts.shape == ends.shape == (len(texts), n_cand)
    for t, spans in enumerate(want):
        assert counts[t] == len(spans)
        got = list(zip(starts[t, : counts[t]].tolist(), ends[t, : counts[t]].tolist(), strict=True))
        assert got == spans
    # Ties by first occurrence: "tide" (2, first) before "moon" (2) before "water" (1).
    last = bytes(buf[offsets[-2] : offsets[-1]])
    words = [
        last[s - offsets[-2] : e - offsets[-2]].decode()
        for s, e in zip(starts[-1, : counts[-1]], ends[-1, : counts[-1]], strict=True)
    ]
    assert words == ["tide", "moon", "water"][: min(n_cand, 3)]


# --------------------------------------------------------------------------- excitation CSR


def test_excitation_csr_matches_reference():
    rng = np.random.default_rng(5)
    ex_re = rng.standard_normal((12, 9))
    ex_im = rng.standard_normal((12, 9))
    ex_re[3] = ex_im[3] = 0.0  # nothing excited
    ex_re[4, 2], ex_im[4, 2] = 1e-15, 0.0  # cancelled to below 1e-12 of the peak
    ex_re[5, :4] = -1.0  # phase π
    ex_im[5, :4] = 0.0
    offsets, idx, amounts, phases = excitation.excitation_csr(ex_re, ex_im, 0.3)
    want = naive.excitation_csr(ex_re, ex_im, 0.3)
    assert offsets[0] == 0 and offsets.shape == (13,)
    for t, entries in enumerate(want):
        lo, hi = offsets[t], offsets[t + 1]
        assert idx[lo:hi].tolist() == [p for p, _, _ in entries]
        np.testing.assert_allclose(amounts[lo:hi], [a for _, a, _ in entries], rtol=1e-15)
        np.testing.assert_allclose(phases[lo:hi], [ph for _, _, ph in entries], rtol=1e-15)
    assert offsets[4] == offsets[3]  # the zero row
    assert 2 not in idx[offsets[4] : offsets[5]].tolist()
    assert (
        amounts.max() == pytest.approx(0.3) and (phases >= 0).all() and (phases < 2 * math.pi).all()
    )


# --------------------------------------------------------------------------- dominant order


class _Sub(np.ndarray):
    """An ndarray subclass (accepted by the full checks, not by the fast path)."""


@pytest.mark.parametrize("seed", range(5))
def test_dominant_order_matches_reference(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(0, 40))
    amounts = rng.choice([0.1, 0.2, 0.3], size=m)  # many ties
    primes = rng.choice([2, 3, 5, 7, 11], size=m).astype(np.int64)
    for k in (0, 1, 5, m, m + 3):
        got = excitation.dominant_order(amounts, primes, k)
        assert got.dtype == np.int64
        assert got.tolist() == naive.dominant_order(amounts, primes, k)
        assert got.tolist() == unchecked.text_dominant_order(amounts, primes, k).tolist()
    frozen_a, frozen_p = amounts.copy(), primes.copy()
    frozen_a.setflags(write=False)
    frozen_p.setflags(write=False)
    assert excitation.dominant_order(frozen_a, frozen_p, 4).tolist() == naive.dominant_order(
        amounts, primes, 4
    )
    # Not the fast path (an ndarray subclass, a NumPy integer k): same answer.
    sub = amounts.copy().view(_Sub)
    assert excitation.dominant_order(sub, primes, np.int64(3)).tolist() == naive.dominant_order(
        amounts, primes, 3
    )


# --------------------------------------------------------------------------- stop table


def test_build_stop_table_is_a_quarter_full_power_of_two_probe_set():
    table = text.build_stop_table(STOP)
    size = table.shape[0]
    assert size >= 16 and size & (size - 1) == 0 and np.count_nonzero(table) == len(STOP)
    assert not table.flags.writeable
    assert set(table[table != 0].tolist()) == STOP
    with pytest.raises(ValueError, match="nonzero"):
        text.build_stop_table([0, 5])


# --------------------------------------------------------------------------- argument checks


def _encode_args(**override):
    buf, offsets = batch(["tide moon"])
    args = {
        "buf": buf,
        "offsets": offsets,
        "word_cp": WORD_CP,
        "stop_table": STOP_TABLE,
        "min_chars": 2,
        "max_chars": 40,
        "code_dim": 8,
    }
    args.update(override)
    return args


@pytest.mark.parametrize(
    ("override", "exc", "name"),
    [
        ({"buf": b"tide moon"}, TypeError, "buf"),
        ({"buf": np.zeros(4, dtype=np.int8)}, TypeError, "buf"),
        ({"buf": np.frombuffer(b"tide \xe4\xb8", dtype=np.uint8)}, ValueError, "buf"),
        ({"offsets": np.array([0, 3, 2], dtype=np.int64)}, ValueError, "offsets"),
        (
            {
                "buf": np.frombuffer("é".encode(), dtype=np.uint8),
                "offsets": np.array([1, 2], dtype=np.int64),
            },
            ValueError,
            "offsets must fall on character boundaries",
        ),
        ({"offsets": np.array([0, 99], dtype=np.int64)}, ValueError, "offsets"),
        ({"offsets": np.zeros(0, dtype=np.int64)}, ValueError, "offsets"),
        ({"offsets": np.array([0, 9], dtype=np.int32)}, TypeError, "offsets"),
        ({"word_cp": WORD_CP[:100]}, ValueError, "word_cp"),
        ({"word_cp": WORD_CP.astype(np.uint8)}, TypeError, "word_cp"),
        ({"stop_table": np.zeros(12, dtype=np.uint64)}, ValueError, "stop_table"),
        ({"stop_table": np.ones(16, dtype=np.uint64)}, ValueError, "stop_table"),
        ({"min_chars": -1}, ValueError, "min_chars"),
        ({"max_chars": 2.5}, TypeError, "max_chars"),
        ({"code_dim": 0}, ValueError, "code_dim"),
        ({"code_dim": 1 << 32}, ValueError, "code_dim"),
        ({"bigram_weight": float("nan")}, ValueError, "bigram_weight"),
        ({"bigram_weight": -1.0}, ValueError, "bigram_weight"),
        ({"n_bank": -1}, ValueError, "n_bank"),
        ({"primes_per_token": 3}, ValueError, "primes_per_token"),
    ],
)
def test_encode_rejects_bad_arguments_by_name(override, exc, name):
    with pytest.raises(exc, match=name):
        text.encode(**_encode_args(**override))


def test_keywords_rejects_bad_arguments_by_name():
    args = _encode_args()
    del args["code_dim"]
    with pytest.raises(ValueError, match="n_cand"):
        text.keywords(**args, n_cand=-1)
    args["offsets"] = np.array([4, 2], dtype=np.int64)
    with pytest.raises(ValueError, match="offsets"):
        text.keywords(**args, n_cand=3)


@pytest.mark.parametrize(
    ("args", "exc", "name"),
    [
        ((np.zeros((2, 3)), np.zeros((2, 4)), 0.3), ValueError, "ex_im"),
        ((np.zeros(3), np.zeros(3), 0.3), ValueError, "ex_re"),
        ((np.full((1, 2), np.nan), np.zeros((1, 2)), 0.3), ValueError, "ex_re"),
        ((np.zeros((1, 2)), np.zeros((1, 2), np.float32), 0.3), TypeError, "ex_im"),
        ((np.zeros((1, 2)), np.zeros((1, 2)), 0.0), ValueError, "gain"),
    ],
)
def test_excitation_csr_rejects_bad_arguments_by_name(args, exc, name):
    with pytest.raises(exc, match=name):
        excitation.excitation_csr(*args)


@pytest.mark.parametrize(
    ("args", "exc", "name"),
    [
        ((np.array([0.1, np.nan]), np.array([2, 3]), 1), ValueError, "amounts"),
        ((np.array([0.1, np.inf]), np.array([2, 3]), 1), ValueError, "amounts"),
        ((np.array([0.1, 0.2]), np.array([2]), 1), ValueError, "primes"),
        ((np.array([0.1, 0.2]), np.array([2.0, 3.0]), 1), TypeError, "primes"),
        ((np.array([1, 2]), np.array([2, 3]), 1), TypeError, "amounts"),
        ((np.array([0.1, 0.2]), np.array([2, 3]), -1), ValueError, "k"),
        ((np.array([0.1, 0.2]), np.array([2, 3]), 1.0), TypeError, "k"),
    ],
)
def test_dominant_order_rejects_bad_arguments_by_name(args, exc, name):
    with pytest.raises(exc, match=name):
        excitation.dominant_order(*args)
