"""The one-call single-text encode (sentient_kernels.text_one) gives the batch path's bits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_core.encoder import get_encoder
from sentient_kernels import text_one

TEXTS = [
    "",
    "the of and",  # stop words only: no tokens
    "Tides follow the moon; spring tides at new and full moon.",
    "Ünïcödé wörds, ελληνικά γράμματα and 中文字符 mixed in",
    "astral 𝒳 letters 𝔸𝔹 and an emoji 🌊 between words 𝒳",
    "numbers 1234 5678 and dates 2024-05-01 " * 20,
    "x " * 3000,  # one-letter tokens, many of them
]


def _same(encoder, text: str) -> None:
    one, batch = encoder.encode(text), encoder.encode_many([text]).item(0)
    assert one.code.dtype == np.float32 and one.code.shape == (encoder.code_dim,)
    assert one.code.tobytes() == batch.code.tobytes()
    assert one.n_tokens == batch.n_tokens and isinstance(one.n_tokens, int)
    assert one.dominant_primes == batch.dominant_primes
    for field in ("indices", "primes", "amounts", "phases"):
        got, want = getattr(one.excitation, field), getattr(batch.excitation, field)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), field
        assert not got.flags.writeable, field
    assert not one.code.flags.writeable


@pytest.mark.parametrize("text", TEXTS)
def test_encode_is_bit_identical_to_the_batch_path(text):
    _same(get_encoder("token"), text)


def test_with_a_small_custom_bank_and_no_bigrams():
    _same(get_encoder("token", bank_primes=[5, 7, 11]), TEXTS[2])
    _same(get_encoder("token", bigram_weight=0.0), TEXTS[3])


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_any_text(text):
    _same(get_encoder("token"), text)


def test_the_kernel_is_warmed_with_the_encoders_signature():
    text_one._warmup()
    before = len(text_one._encode_one.signatures)
    get_encoder("token").encode("a fresh text about warm kernels")
    assert len(text_one._encode_one.signatures) == before


def _tables():
    from sentient_core.encoder.token_encoder import STOP_TABLE, WORD_TABLE

    return WORD_TABLE.bmp, STOP_TABLE


def test_the_checked_wrapper_matches_the_encoder():
    encoder = get_encoder("token")
    word_cp, stop = _tables()
    text = TEXTS[2]
    code, n_tokens, idx, primes, amounts, phases, dominant = text_one.encode_one(
        np.frombuffer(text.lower().encode(), dtype=np.uint8),
        word_cp,
        stop,
        2,
        40,
        encoder.code_dim,
        encoder.bank_primes,
        bigram_weight=encoder._bigram_weight,
        primes_per_token=encoder.config.primes_per_token,
        gain=encoder.config.excitation_gain,
        n_dominant=encoder.config.n_dominant,
    )
    from sentient_core.analysis import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS

    assert (MIN_TOKEN_CHARS, MAX_TOKEN_CHARS) == (2, 40)  # the arguments above
    want = encoder.encode(text)
    assert code.tobytes() == want.code.tobytes() and n_tokens == want.n_tokens
    assert idx.tobytes() == want.excitation.indices.tobytes()
    assert primes.tobytes() == want.excitation.primes.tobytes()
    assert amounts.tobytes() == want.excitation.amounts.tobytes()
    assert phases.tobytes() == want.excitation.phases.tobytes()
    assert tuple(dominant.tolist()) == want.dominant_primes


def test_the_checked_wrapper_names_a_bad_argument():
    word_cp, stop = _tables()
    buf = np.frombuffer(b"tides and moons", dtype=np.uint8)
    bank = np.array([2, 3, 5], dtype=np.int64)
    ok = (buf, word_cp, stop, 2, 40, 16, bank)
    text_one.encode_one(*ok)  # the baseline call is fine
    bad_cases = [
        ((np.frombuffer(b"\xff\xfe", dtype=np.uint8), *ok[1:]), "UTF-8"),
        ((buf.astype(np.int64), *ok[1:]), "buf"),
        ((*ok[:5], 0, bank), "code_dim"),
        ((*ok[:6], np.array([], dtype=np.int64)), "bank_primes"),
        ((*ok[:6], bank.astype(np.float64)), "bank_primes"),
        ((*ok[:2], np.zeros(3, dtype=np.uint64), *ok[3:]), "stop_table"),
    ]
    for args, name in bad_cases:
        with pytest.raises((TypeError, ValueError), match=name):
            text_one.encode_one(*args)
    for kwargs, name in (
        ({"gain": 0.0}, "gain"),
        ({"n_dominant": -1}, "n_dominant"),
        ({"primes_per_token": 3}, "primes_per_token"),
        ({"bigram_weight": -1.0}, "bigram_weight"),
    ):
        with pytest.raises((TypeError, ValueError), match=name):
            text_one.encode_one(*ok, **kwargs)
