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
