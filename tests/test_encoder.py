"""sentient_core.encoder: determinism, tokenisation, codes and excitations.

The Numba kernel of the token encoder is checked against a slow pure-Python
reference written here from the documented algorithm (tokenize → drop
stop-words → stable hash → 1 + ln tf → signed buckets, bigrams, prime picks).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_core.encoder import (
    CHAR_TO_PRIME,
    DEFAULT_BANK_PRIMES,
    ENCODER_NAMES,
    CharPrimeEncoder,
    TokenPrimeEncoder,
    get_encoder,
    hashing,
    token_hash,
)
from sentient_core.ingest.keywords import STOP_WORDS, tokenize
from sentient_kernels import token_hash as kernel_hash
from sentient_kernels.prsc import first_primes

REPO = Path(__file__).resolve().parents[1]
MASK64 = (1 << 64) - 1
TWO_PI = 2.0 * math.pi

# Three paragraphs on unrelated subjects (written for this test).
BREAD = (
    "Knead the dough for ten minutes until it feels smooth and elastic, then leave it "
    "to rise in a warm kitchen. Flour, water, yeast and salt are all a basic loaf needs; "
    "bake it in a hot oven until the crust turns deep brown and sounds hollow when tapped."
)
COMET = (
    "A comet's nucleus is a loose ball of ice and rock. Approaching the sun, sunlight "
    "vaporises the ice and a glowing coma forms, while solar wind pushes a long tail "
    "away from the star. Astronomers track orbits with telescopes over many nights."
)
BONDS = (
    "Government bonds pay a fixed coupon until maturity. When central banks raise "
    "interest rates, existing bond prices fall, because new issues offer investors "
    "higher yields; portfolio managers hedge duration risk with futures and swaps."
)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a.astype(np.float64), b.astype(np.float64)))


def words_300() -> list[str]:
    from pydoc_data.topics import topics

    words = " ".join(topics[name] for name in sorted(topics)).split()
    return words[5000:5300]


# --------------------------------------------------------------------------- reference


def mix64(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & MASK64
    return h


def reduce32(x: int, n: int) -> int:
    return ((x & 0xFFFFFFFF) * n) >> 32


def reference_token_encode(
    text: str,
    bank_size: int = 64,
    code_dim: int = 256,
    bigram_weight: float = 0.5,
    primes_per_token: int = 2,
) -> tuple[np.ndarray, dict[int, complex], int]:
    """Slow reference: (code, per-bank-index complex sum, n content tokens)."""
    tokens = [t for t in tokenize(text) if t not in STOP_WORDS]
    hashes = [token_hash(t) for t in tokens]
    acc = np.zeros(code_dim)

    def add(h: int, weight: float) -> None:
        m = mix64(h ^ kernel_hash._SALT_CODE)
        acc[reduce32(m, code_dim)] += -weight if m >> 63 else weight

    sums: dict[int, complex] = {}
    for h, tf in Counter(hashes).items():
        w = 1.0 + math.log(tf)
        add(h, w)
        ma = mix64(h ^ kernel_hash._SALT_PRIME_A)
        first = reduce32(ma, bank_size)
        picks = [(first, ma >> 52)]
        if primes_per_token > 1 and bank_size > 1:
            mb = mix64(h ^ kernel_hash._SALT_PRIME_B)
            picks.append(((first + 1 + reduce32(mb, bank_size - 1)) % bank_size, mb >> 52))
        for idx, q in picks:
            sums[idx] = sums.get(idx, 0j) + w * complex(
                math.cos(q * TWO_PI / 4096), math.sin(q * TWO_PI / 4096)
            )
    if bigram_weight > 0:
        pairs = [
            mix64(((a * kernel_hash._SALT_BIGRAM) & MASK64) ^ b)
            for a, b in itertools.pairwise(hashes)
        ]
        for h, tf in Counter(pairs).items():
            add(h, bigram_weight * (1.0 + math.log(tf)))
    norm = np.linalg.norm(acc)
    code = acc / norm if norm > 0 else acc
    return code, sums, len(tokens)


MIXED_TEXTS = [
    BREAD,
    "“Curly quotes”, naïve café — déjà vu; ÜBER straße İstanbul",
    "snake_case_names and __dunder__ plus x y z 42 3.14 1e10",
    "中文字符 and 日本語のテキスト mixed with English words",
    "emoji 😀 between words, 𠀀𠀁 astral CJK, and 𝐛𝐨𝐥𝐝 math letters",
    "a" * 40 + " " + "b" * 41 + " " + "é" * 40 + " " + "é" * 41,
    "repeat repeat repeat repeat other other word",
    "",
    "the of and to in",
    "tab\tseparated\nnew\r\nlines\x00nul",
]


# --------------------------------------------------------------------------- hashing


def test_token_hash_is_fnv1a_then_mix_on_published_vectors():
    # Published 64-bit FNV-1a test vectors.
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foobar") == 0x85944171F73967E8
    for token in ["a", "foobar", "naïve", "中文", ""]:
        data = token.encode("utf-8")
        expected = mix64(fnv1a64(data) ^ ((len(data) * 0x9E3779B97F4A7C15) & MASK64))
        assert token_hash(token) == expected


@pytest.mark.slow
def test_codes_bit_identical_across_processes_with_different_hash_seeds(tmp_path):
    texts = [*MIXED_TEXTS, COMET, BONDS]
    here = get_encoder("token").encode_batch(texts)
    here_exc = get_encoder("token").encode_many(texts)
    script = (
        "import json, sys, numpy as np\n"
        "from sentient_core.encoder import get_encoder\n"
        "texts = json.loads(sys.stdin.read())\n"
        "b = get_encoder('token').encode_many(texts)\n"
        f"np.savez(r'{tmp_path}/' + sys.argv[1], codes=b.codes, idx=b.indices,"
        " amounts=b.amounts, phases=b.phases)\n"
        "print(hash('sentient'))\n"
    )
    str_hashes = set()
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        proc = subprocess.run(
            [sys.executable, "-c", script, f"out{seed}.npz"],
            input=json.dumps(texts),
            text=True,
            env=env,
            cwd=REPO,
            check=True,
            timeout=300,
            capture_output=True,
        )
        str_hashes.add(proc.stdout.strip())
        with np.load(tmp_path / f"out{seed}.npz") as out:
            assert out["codes"].tobytes() == here.tobytes()
            assert np.array_equal(out["idx"], here_exc.indices)
            assert out["amounts"].tobytes() == here_exc.amounts.tobytes()
            assert out["phases"].tobytes() == here_exc.phases.tobytes()
    assert here.any()
    # The two seeds really gave the subprocesses different str hashing.
    assert len(str_hashes) == 2


# --------------------------------------------------------------------------- kernel vs reference


@pytest.mark.parametrize("text", MIXED_TEXTS)
def test_kernel_matches_reference(text):
    encoder = TokenPrimeEncoder()
    got = encoder.encode(text)
    code, sums, n_tokens = reference_token_encode(text)
    assert got.n_tokens == n_tokens
    np.testing.assert_allclose(got.code, code, atol=1e-6)
    peak = max((abs(z) for z in sums.values()), default=0.0)
    kept = sorted(i for i, z in sums.items() if abs(z) > peak * 1e-12)
    assert got.excitation.indices.tolist() == kept
    for i, amount, phase in zip(
        got.excitation.indices, got.excitation.amounts, got.excitation.phases, strict=True
    ):
        z = sums[int(i)]
        assert amount == pytest.approx(0.3 * abs(z) / peak, rel=1e-12)
        assert phase == pytest.approx(math.atan2(z.imag, z.real) % TWO_PI, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("abcXYZ019_ .,-'\n\té中😀𠀀İß")),
        max_size=80,
    ),
    st.sampled_from([8, 100, 256]),
    st.sampled_from([0.0, 0.5, 2.0]),
)
def test_kernel_matches_reference_on_random_text(text, code_dim, bigram_weight):
    encoder = TokenPrimeEncoder(code_dim=code_dim, bigram_weight=bigram_weight)
    got = encoder.encode(text)
    code, _, n_tokens = reference_token_encode(text, code_dim=code_dim, bigram_weight=bigram_weight)
    assert got.n_tokens == n_tokens
    np.testing.assert_allclose(got.code, code, atol=1e-6)


def test_content_tokens_are_tokenize_minus_stop_words():
    text = "The Observer's notes: THE quick_brown fox, and a 42nd fox."
    assert hashing._tokens(text) == ["observer", "notes", "quick_brown", "fox", "42nd", "fox"]
    with pytest.raises(TypeError):
        hashing._tokens(b"bytes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- behaviour


def test_stop_words_only_give_zero_code_and_no_excitation():
    encoder = get_encoder("token")
    out = encoder.encode("The and of to in IS it, they were; but if or because. I a")
    assert out.n_tokens == 0
    assert not out.code.any()
    assert len(out.excitation) == 0
    assert out.dominant_primes == ()
    assert not encoder.encode_batch([""]).any()


def test_stop_words_do_not_change_the_code():
    encoder = get_encoder("token")
    with_stops = encoder.encode("The cat sat on the mat, and then it was the cat again.")
    without = encoder.encode("cat sat mat cat")
    assert with_stops.code.tobytes() == without.code.tobytes()


def test_same_text_same_code_single_and_batch():
    encoder = get_encoder("token")
    texts = [BREAD, COMET, BONDS, "", BREAD]
    batch = encoder.encode_batch(texts)
    for i, text in enumerate(texts):
        assert encoder.encode(text).code.tobytes() == batch[i].tobytes()
    assert batch[0].tobytes() == batch[4].tobytes()
    # A fresh encoder gives the same bytes.
    assert get_encoder("token").encode_batch(texts).tobytes() == batch.tobytes()


def test_near_duplicate_scores_high():
    words = words_300()
    assert len(words) == 300
    changed = list(words)
    changed[150] = "zebra" if words[150] != "zebra" else "giraffe"
    encoder = get_encoder("token")
    a, b = encoder.encode_batch([" ".join(words), " ".join(changed)])
    assert cosine(a, b) > 0.9
    assert cosine(a, b) < 1.0


def test_unrelated_texts_score_low():
    encoder = get_encoder("token")
    codes = encoder.encode_batch([BREAD, COMET, BONDS])
    for i in range(3):
        for j in range(i + 1, 3):
            assert abs(cosine(codes[i], codes[j])) < 0.25
    # The compatibility encoder cannot tell them apart (why it is not the default).
    compat = get_encoder("char-compat").encode_batch([BREAD, COMET, BONDS])
    assert min(cosine(compat[i], compat[j]) for i, j in [(0, 1), (0, 2), (1, 2)]) > 0.7


def test_word_order_matters_only_through_bigrams():
    plain = get_encoder("token", bigrams=False)
    assert (
        plain.encode("dog bites man").code.tobytes() == plain.encode("man bites dog").code.tobytes()
    )
    default = get_encoder("token")
    a, b = default.encode_batch(["dog bites man", "man bites dog"])
    assert 0.3 < cosine(a, b) < 0.99


@pytest.mark.parametrize("code_dim", [8, 64, 257, 1024])
def test_code_dim_is_configurable_and_codes_are_unit_norm(code_dim):
    encoder = get_encoder("token", code_dim=code_dim)
    codes = encoder.encode_batch([BREAD, COMET, "the", "x"])
    assert codes.shape == (4, code_dim)
    assert codes.dtype == np.float32
    norms = np.linalg.norm(codes.astype(np.float64), axis=1)
    np.testing.assert_allclose(norms[:2], 1.0, atol=1e-6)
    assert norms[2] == 0.0
    assert norms[3] == 0.0  # one-character tokens are not content


def test_default_configuration():
    encoder = get_encoder()
    assert isinstance(encoder, TokenPrimeEncoder)
    assert encoder.code_dim == 256
    assert encoder.bank_primes.tolist() == [
        p for p in range(2, 312) if all(p % d for d in range(2, int(p**0.5) + 1))
    ]


@pytest.mark.parametrize(
    "options",
    [{"code_dim": 4}, {"code_dim": 1 << 20}, {"bigram_weight": -1.0}, {"colour": "red"}],
)
def test_bad_options_raise_value_error(options):
    with pytest.raises(ValueError):
        get_encoder("token", **options)


def test_unknown_encoder_name_lists_known_names():
    with pytest.raises(ValueError) as info:
        get_encoder("word2vec")
    for name in ENCODER_NAMES:
        assert name in str(info.value)
    assert set(ENCODER_NAMES) == {"token", "char-compat"}


@pytest.mark.parametrize("name", ["token", "char-compat"])
@pytest.mark.parametrize("bad", [b"bytes", None, 42, ["list"]])
def test_non_str_input_raises_type_error(name, bad):
    encoder = get_encoder(name)
    with pytest.raises(TypeError):
        encoder.encode(bad)
    with pytest.raises(TypeError):
        encoder.encode_batch([BREAD, bad])
    with pytest.raises(TypeError):
        encoder.encode_many([bad])


@pytest.mark.parametrize("name", ["token", "char-compat"])
def test_a_single_string_is_not_a_batch(name):
    with pytest.raises(TypeError):
        get_encoder(name).encode_batch("not a list")


# --------------------------------------------------------------------------- excitation


def test_excitation_shape_and_ranges():
    encoder = get_encoder("token")
    exc = encoder.encode(COMET).excitation
    n_bank = DEFAULT_BANK_PRIMES.size
    assert exc.indices.dtype == np.int64
    assert exc.amounts.dtype == np.float64
    assert exc.phases.dtype == np.float64
    assert np.all(np.diff(exc.indices) > 0)
    assert exc.indices.min() >= 0
    assert exc.indices.max() < n_bank
    assert np.array_equal(exc.primes, DEFAULT_BANK_PRIMES[exc.indices])
    assert np.all(exc.amounts > 0)
    assert exc.amounts.max() == pytest.approx(0.3)
    assert np.all((exc.phases >= 0) & (exc.phases < TWO_PI))
    assert not exc.indices.flags.writeable


def test_one_token_excites_two_distinct_primes():
    two = get_encoder("token").encode("resonance").excitation
    assert len(two) == 2
    np.testing.assert_allclose(two.amounts, 0.3)
    one = get_encoder("token", primes_per_token=1).encode("resonance").excitation
    assert len(one) == 1
    assert one.indices[0] in two.indices


def test_dominant_primes_are_strongest_first():
    out = get_encoder("token", n_dominant=5).encode(BONDS)
    exc = out.excitation
    amount_of = dict(zip(exc.primes.tolist(), exc.amounts.tolist(), strict=True))
    dom = out.dominant_primes
    assert len(dom) == 5
    values = [amount_of[p] for p in dom]
    assert values == sorted(values, reverse=True)
    assert values[0] == max(exc.amounts)
    others = [a for p, a in amount_of.items() if p not in dom]
    assert max(others) <= min(values)


def test_custom_bank():
    bank = first_primes(16)[::-1].copy()  # order need not be ascending
    encoder = get_encoder("token", bank_primes=bank)
    exc = encoder.encode(BREAD).excitation
    assert exc.indices.max() < 16
    assert np.array_equal(exc.primes, bank[exc.indices])
    single = get_encoder("token", bank_primes=[7]).encode(BREAD).excitation
    assert single.primes.tolist() == [7]
    with pytest.raises(ValueError):
        get_encoder("token", bank_primes=[2, 3, 4])
    with pytest.raises(ValueError):
        get_encoder("token", bank_primes=[2, 3, 3])
    with pytest.raises(ValueError):
        get_encoder("token", bank_primes=[])
    with pytest.raises(TypeError):
        get_encoder("token", bank_primes=[2.0, 3.0])


@pytest.mark.parametrize("name", ["token", "char-compat"])
def test_encode_many_matches_encode(name):
    encoder = get_encoder(name)
    texts = [BREAD, "", COMET, "the of", BONDS]
    batch = encoder.encode_many(texts)
    assert len(batch) == len(texts)
    for i, text in enumerate(texts):
        one, from_batch = encoder.encode(text), batch.item(i)
        assert one.code.tobytes() == from_batch.code.tobytes()
        assert one.n_tokens == from_batch.n_tokens
        assert one.dominant_primes == from_batch.dominant_primes
        for field in ("indices", "primes", "amounts", "phases"):
            assert np.array_equal(
                getattr(one.excitation, field), getattr(from_batch.excitation, field)
            )


# --------------------------------------------------------------------------- char-compat


def trial_division_primes(n: int) -> list[int]:
    out, p = [], 2
    while len(out) < n:
        if all(p % d for d in range(2, int(p**0.5) + 1)):
            out.append(p)
        p += 1
    return out


def test_char_table_maps_kth_character_to_kth_prime():
    chars = "abcdefghijklmnopqrstuvwxyz0123456789"
    expected = dict(zip(chars, trial_division_primes(36), strict=True))
    assert expected == CHAR_TO_PRIME
    assert (CHAR_TO_PRIME["a"], CHAR_TO_PRIME["b"], CHAR_TO_PRIME["c"]) == (2, 3, 5)


def test_char_compat_excites_the_characters_primes():
    encoder = get_encoder("char-compat")
    assert isinstance(encoder, CharPrimeEncoder)
    out = encoder.encode("Aab c")
    assert out.excitation.primes.tolist() == [2, 3, 5]
    # a occurs 2×, b and c once: amounts proportional to counts, strongest = gain.
    np.testing.assert_allclose(out.excitation.amounts, [0.3, 0.15, 0.15])
    assert np.all(out.excitation.phases == 0.0)
    assert out.dominant_primes == (2, 3, 5)
    assert out.n_tokens == 4
    np.testing.assert_allclose(np.linalg.norm(out.code), 1.0, atol=1e-6)


def test_char_compat_ignores_characters_outside_the_table_or_bank():
    encoder = get_encoder("char-compat")
    assert encoder.encode("a!é中😀 -_").code.tobytes() == encoder.encode("a").code.tobytes()
    # A bank without 2, 3, 5 (as in the reference, where a/b/c fall outside it).
    bank = np.array([7, 11, 13], dtype=np.int64)  # d, e, f
    shifted = get_encoder("char-compat", bank_primes=bank)
    nothing = shifted.encode("abc cab")
    assert len(nothing.excitation) == 0
    assert not nothing.code.any()
    some = shifted.encode("abc def")
    assert some.excitation.primes.tolist() == [7, 11, 13]


def test_char_compat_code_places_bank_index_mod_code_dim():
    encoder = get_encoder("char-compat", code_dim=8)
    code = encoder.encode("a i").code  # a → bank 0, i (23, 9th prime) → bank 8 → dim 0
    assert code[0] == pytest.approx(1.0)
    assert np.count_nonzero(code) == 1


def test_fingerprint_tracks_everything_that_changes_codes():
    base = get_encoder("token").fingerprint
    assert base == get_encoder("token").fingerprint
    assert base == get_encoder("token", code_dim=256, bigrams=True).fingerprint
    others = {
        get_encoder("token", code_dim=512).fingerprint,
        get_encoder("token", bigrams=False).fingerprint,
        get_encoder("token", bank_primes=first_primes(32)).fingerprint,
        get_encoder("char-compat").fingerprint,
    }
    assert base not in others
    assert len(others) == 4


# --- keywords_many: the batched keyword kernel equals the Python reference ---


@settings(deadline=None, max_examples=150)
@given(
    st.lists(
        st.lists(
            st.sampled_from([*"abc ABC 123 ß İ ü é ² ٣ -.\n", "the", " and ", "x1"]),
            max_size=60,
        ).map("".join),
        min_size=1,
        max_size=6,
    )
)
def test_keywords_many_matches_python_keywords(texts):
    from sentient_core.ingest.keywords import keywords

    enc = get_encoder("token")
    assert enc.keywords_many(texts, 5) == [keywords(t, 5) for t in texts]


def test_keywords_many_on_real_documentation():
    from pydoc_data.topics import topics

    from sentient_core.ingest.keywords import keywords

    texts = [topics[name][:2000] for name in sorted(topics)[:60]]
    enc = get_encoder("token")
    assert enc.keywords_many(texts) == [keywords(t) for t in texts]
    assert enc.keywords_many([]) == []
    with pytest.raises(TypeError):
        enc.keywords_many([b"bytes"])
