"""sentient_kernels.text_batch: one pass equals the three kernels it replaces, bit for bit,
and the pure-Python references in tests/naive_text.py."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from sentient_kernels import excitation, lexical, text, text_batch
from tests.naive import text as naive
from tests.test_text import STOP, STOP_TABLE, WORD_CP, batch, random_texts

BANK = np.array([2, 3, 5, 7, 11, 13, 17, 19, 23], dtype=np.int64)


def separate(texts, *, code_dim, bigram_weight, bank, k_primes, gain, n_dominant, n_cand, lo, hi):
    """What the three kernels (and the excitation post-processing) give, one by one."""
    buf, offsets = batch(texts)
    codes, n_tokens, ex_re, ex_im = text.encode(
        buf,
        offsets,
        WORD_CP,
        STOP_TABLE,
        lo,
        hi,
        code_dim,
        bigram_weight=bigram_weight,
        n_bank=bank.size,
        primes_per_token=k_primes,
    )
    ex = excitation.excitation_csr(ex_re, ex_im, gain)
    dominant = []
    for t in range(len(texts)):
        a, b = ex[0][t], ex[0][t + 1]
        primes = bank[ex[1][a:b]]
        dominant.append(primes[excitation.dominant_order(ex[2][a:b].copy(), primes, n_dominant)])
    cand = text.keywords(buf, offsets, WORD_CP, STOP_TABLE, lo, hi, n_cand)
    terms = lexical.term_counts(buf, offsets, WORD_CP, STOP_TABLE, lo, hi)
    return buf, offsets, codes, n_tokens, ex, dominant, cand, terms


@pytest.mark.parametrize(
    ("seed", "code_dim", "bigram_weight", "k_primes", "n_dominant", "n_cand", "lo", "hi"),
    [
        (0, 256, 0.5, 2, 8, 24, 2, 40),
        (1, 8, 0.0, 1, 3, 4, 1, 100),
        (2, 64, 1.5, 2, 0, 0, 3, 10),
        (3, 1, 0.5, 1, 20, 1, 2, 40),
    ],
)
def test_equals_the_separate_kernels_bit_for_bit(
    seed, code_dim, bigram_weight, k_primes, n_dominant, n_cand, lo, hi
):
    texts = [*random_texts(seed, 40), "", "the and of", "😀", "tide " * 300]
    kw = dict(code_dim=code_dim, bigram_weight=bigram_weight, k_primes=k_primes, gain=0.3)
    buf, offsets, codes, n_tokens, ex, dominant, cand, terms = separate(
        texts, bank=BANK, n_dominant=n_dominant, n_cand=n_cand, lo=lo, hi=hi, **kw
    )
    got = text_batch.analyse(
        buf,
        offsets,
        WORD_CP,
        STOP_TABLE,
        lo,
        hi,
        code_dim,
        BANK,
        bigram_weight=bigram_weight,
        primes_per_token=k_primes,
        gain=0.3,
        n_dominant=n_dominant,
        n_cand=n_cand,
    )
    np.testing.assert_array_equal(got.codes, codes)
    np.testing.assert_array_equal(got.n_tokens, n_tokens)
    for mine, theirs in zip(
        (got.ex_offsets, got.ex_indices, got.ex_amounts, got.ex_phases), ex, strict=True
    ):
        np.testing.assert_array_equal(mine, theirs)
    for t, want in enumerate(dominant):
        np.testing.assert_array_equal(got.dominant[t, : got.n_dominant_used[t]], want)
    np.testing.assert_array_equal(got.cand_start, cand[0])
    np.testing.assert_array_equal(got.cand_end, cand[1])
    np.testing.assert_array_equal(got.n_cand_used, cand[2])
    np.testing.assert_array_equal(got.term_offsets, terms.offsets)
    np.testing.assert_array_equal(got.terms, terms.terms)
    np.testing.assert_array_equal(got.tfs, terms.tfs)
    np.testing.assert_array_equal(n_tokens, terms.lengths)
    assert n_tokens.sum() > 0


def test_matches_the_pure_python_references():
    texts = [*random_texts(11, 30), "", "über straße café naïve 日本語 中文 x 42"]
    buf, offsets = batch(texts)
    got = text_batch.analyse(
        buf, offsets, WORD_CP, STOP_TABLE, 2, 40, 32, BANK, bigram_weight=0.5, n_cand=6
    )
    want_codes, want_tokens, _ = naive.encode(
        buf, offsets, WORD_CP, STOP, 2, 40, 32, 0.5, BANK.size, 1
    )
    np.testing.assert_allclose(got.codes, want_codes, rtol=0.0, atol=1e-6)
    np.testing.assert_array_equal(got.n_tokens, want_tokens)
    for t, spans in enumerate(naive.keywords(buf, offsets, WORD_CP, STOP, 2, 40, 6)):
        used = got.n_cand_used[t]
        assert list(zip(got.cand_start[t, :used], got.cand_end[t, :used], strict=True)) == spans
    for t, (data, lo) in enumerate(naive._texts(buf, offsets)):
        counts = Counter(h for h, _, _ in naive.tokens(data, lo, WORD_CP, STOP, 2, 40))
        a, b = got.term_offsets[t], got.term_offsets[t + 1]
        assert dict(zip(got.terms[a:b].tolist(), got.tfs[a:b].tolist(), strict=True)) == counts
        assert got.terms[a:b].tolist() == sorted(counts)


def test_sort_paths_agree():
    # Short texts take the bucket sort, a text of many tokens the library sort.
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(3000)]
    long_text = " ".join(rng.choice(words, size=300_000))  # > 4 · 2**16 tokens
    texts = [long_text, *random_texts(9, 5), " ".join(words[:700] * 3)]
    buf, offsets, codes, _, ex, _, cand, terms = separate(
        texts,
        code_dim=64,
        bigram_weight=0.5,
        bank=BANK,
        k_primes=2,
        gain=0.3,
        n_dominant=4,
        n_cand=10,
        lo=2,
        hi=40,
    )
    got = text_batch.analyse(
        buf, offsets, WORD_CP, STOP_TABLE, 2, 40, 64, BANK, bigram_weight=0.5,
        primes_per_token=2, gain=0.3, n_dominant=4, n_cand=10,
    )  # fmt: skip
    np.testing.assert_array_equal(got.codes, codes)
    np.testing.assert_array_equal(got.ex_amounts, ex[2])
    np.testing.assert_array_equal(got.cand_start, cand[0])
    np.testing.assert_array_equal(got.terms, terms.terms)
    np.testing.assert_array_equal(got.tfs, terms.tfs)


def test_empty_batch():
    got = text_batch.analyse(
        np.zeros(0, np.uint8), np.zeros(1, np.int64), WORD_CP, STOP_TABLE, 2, 40, 8, BANK
    )
    assert got.codes.shape == (0, 8) and got.terms.size == 0 and got.ex_offsets.tolist() == [0]


def test_rejects_bad_arguments():
    buf, offsets = batch(["tide moon"])
    args = (buf, offsets, WORD_CP, STOP_TABLE, 2, 40, 8, BANK)
    with pytest.raises(ValueError, match="offsets"):
        text_batch.analyse(buf, np.array([0, buf.size + 1]), *args[2:])
    with pytest.raises(ValueError, match="bank_primes"):
        text_batch.analyse(*args[:7], np.zeros(0, np.int64))
    with pytest.raises(ValueError, match="gain"):
        text_batch.analyse(*args, gain=0.0)
    with pytest.raises(ValueError, match="n_cand"):
        text_batch.analyse(*args, n_cand=-1)
    with pytest.raises(ValueError, match="UTF-8"):
        text_batch.analyse(np.array([0xC3], np.uint8), np.array([0, 1]), *args[2:])


def _fields(a):
    return [np.asarray(x) for x in a]


@pytest.mark.parametrize("seed", [0, 1])
def test_any_number_of_parts_gives_the_serial_bits(seed):
    # Every text's results land in places of their own; cutting the batch into parts
    # (run in parallel) must not change a bit. Parts may fall on empty texts.
    rng = np.random.default_rng(seed)
    texts = [*random_texts(seed + 20, 37), "", "", "the and of", "tide " * 300]
    texts = [texts[i] for i in rng.permutation(len(texts))]
    buf, offsets = batch(texts)
    kw = dict(bigram_weight=0.5, primes_per_token=2, gain=0.3, n_dominant=5, n_cand=9)
    serial = _fields(
        text_batch.analyse(buf, offsets, WORD_CP, STOP_TABLE, 2, 40, 64, BANK, parts=1, **kw)
    )
    for parts in (0, 2, 3, 7, len(texts), 1000):
        got = _fields(
            text_batch.analyse(
                buf, offsets, WORD_CP, STOP_TABLE, 2, 40, 64, BANK, parts=parts, **kw
            )
        )
        for mine, theirs in zip(got, serial, strict=True):
            np.testing.assert_array_equal(mine, theirs)


def test_texts_full_of_distinct_one_char_terms_keep_their_own_terms():
    # The densest texts: one-byte tokens, each distinct, fill a text's term slot
    # (b // 2 + 1 terms) to the last place, next to texts doing the same.
    letters = "bcdefghjklmnopqrstuvwxyz"  # no stop word ("a", "i")
    texts = [" ".join(letters[i:] + letters[:i]) for i in range(6)] + ["q", "", "z y"]
    buf, offsets = batch(texts)
    want = lexical.term_counts(buf, offsets, WORD_CP, STOP_TABLE, 1, 40)
    for parts in (1, 2, 4, 9):
        got = text_batch.analyse(buf, offsets, WORD_CP, STOP_TABLE, 1, 40, 8, BANK, parts=parts)
        np.testing.assert_array_equal(got.term_offsets, want.offsets)
        np.testing.assert_array_equal(got.terms, want.terms)
        np.testing.assert_array_equal(got.tfs, want.tfs)
    assert (np.diff(want.offsets)[:6] == np.diff(offsets)[:6] // 2 + 1).all()  # slots full
