"""Fuzzing every extractor (HTML, JSON, PDF, plain text) with adversarial bytes.

Property: :func:`sentient_core.ingest.extract_bytes` either returns text that
can be stored (it encodes to UTF-8) or
raises one of the documented :class:`~sentient_core.ingest.IngestError`
subclasses, and never the safety net :class:`ExtractorFailure` (which would
mean a parser raised something nobody foresaw). Time per input is bounded by
the per-file time budget, not by a wall-clock assertion: an input that ran
past it is a ``TimeBudgetExceeded`` refusal, counted like any other.

A short run (``FUZZ_SHORT`` inputs per target) is part of the normal suite; the
``slow`` tests run ``FUZZ_LONG`` (10,000) inputs per target and check that that
many really ran. Set ``SENTIENT_FUZZ_REPORT=path.json`` to have each run append
its counts (inputs, outcomes by type, largest time per input) to that file.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sentient_core.ingest import (
    CorruptFile,
    EmptyFile,
    EncryptedFile,
    ExtractorFailure,
    IngestError,
    MismatchedContent,
    TimeBudgetExceeded,
    TooLarge,
    extract_bytes,
)
from tests.pdfgen import encrypted_pdf, text_pdf

FUZZ_SHORT = 200
FUZZ_LONG = 10_000

#: What bad content may raise (UnsupportedFormat/UnreadableFile concern names
#: and files on disk, which extract_bytes never sees).
DOCUMENTED = (
    CorruptFile,
    EmptyFile,
    EncryptedFile,
    MismatchedContent,
    TimeBudgetExceeded,
    TooLarge,
)
DATA = Path(__file__).resolve().parent / "data" / "html"

# --------------------------------------------------------------------------- strategies


@st.composite
def mutated(draw, seeds: list[bytes]) -> bytes:
    """A seed document with bytes flipped, inserted, deleted, or the tail cut."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 8))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "cut", "repeat"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 64))]
        elif op == "cut":
            del data[pos:]
        elif op == "repeat" and data:
            piece = bytes(data[pos : pos + draw(st.integers(1, 32))])
            data[pos:pos] = piece * draw(st.integers(2, 200))
    return bytes(data)


def _html_seeds() -> list[bytes]:
    seeds = [p.read_bytes()[:6000] for p in sorted(DATA.glob("*.html"))]
    seeds.append(
        b"<html><head><meta charset='utf-8'><title>T</title></head><body><main>"
        b"<h1>H</h1><p>a &amp; b<br>c</p><pre>x\ny</pre><table><tr><td>1<td>2</table>"
        b"</main><nav>n</nav><!-- c --></body></html>"
    )
    return seeds


HTML_PIECES = [
    b"<div>", b"</div>", b"<a", b"<a>", b"<!--", b"-->", b"--!>", b"<p>", b"</p>", b"<b>",
    b"</b>", b"<i>", b"<table>", b"<tr>", b"<td>", b"<li>", b"<ul>", b"<pre>", b"\n",
    b"<br>", b"&#1;", b"&#0;", b"&#x110000;", b"&amp", b"&nbsp;", b"<script>", b"</script>",
    b"<style>", b"<meta charset=rot13>", b"<meta charset='base64'>", b"<meta charset=utf-16>",
    b"<meta charset=x-bogus>", b"<![CDATA[", b"]]>", b"<?xml version='1.0'?>", b"<svg>",
    b"<math>", b"<main>", b"</main>", b"<nav>", b"<article>", b"<template>", b"<noscript>",
    b"<select><option>", b"<textarea>", b"<plaintext>", b"<frameset>", b"<html>", b"<body>",
    b"<head>", b"<title>", b"\x00", b"\xff", b"\xef\xbb\xbf", b"\xfe\xff", b"\r", b"\x0c",
    b" hidden ", b" role=main ", b"word ", b"\xc3\xa9t\xc3\xa9 ", "\ufdd0".encode(),
]  # fmt: skip


@st.composite
def html_inputs(draw) -> bytes:
    kind = draw(st.sampled_from(["pieces", "mutated", "bytes", "nested", "attrs", "comment"]))
    if kind == "pieces":
        return b"".join(draw(st.lists(st.sampled_from(HTML_PIECES), max_size=300)))
    if kind == "mutated":
        return draw(mutated(_html_seeds()))
    if kind == "bytes":
        return draw(st.binary(max_size=2000))
    if kind == "nested":
        tag = draw(st.sampled_from([b"div", b"b", b"li", b"table", b"span", b"p", b"font"]))
        depth = draw(st.integers(0, 4000))
        close = draw(st.booleans())
        inner = draw(st.sampled_from([b"x", b"", b"<p>text</p>"]))
        opening = (b"<" + tag + b">") * depth
        return opening + inner + ((b"</" + tag + b">") * depth if close else b"")
    if kind == "attrs":
        n = draw(st.integers(0, 3000))
        value = draw(st.binary(max_size=40)).replace(b'"', b"")
        return b'<p title="' + value * draw(st.integers(1, 50)) + b'"' + b" a=1" * n + b">text"
    tail = draw(st.binary(max_size=500))
    return b"<p>before</p><!--" + tail + draw(st.sampled_from([b"", b"-->after", b"--!>x"]))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=30,
)


@st.composite
def json_inputs(draw) -> bytes:
    kind = draw(st.sampled_from(["value", "deep", "numbers", "mutated", "bytes", "utf8"]))
    values = JSON_VALUES
    if kind == "value":
        return json.dumps(draw(values)).encode()
    if kind == "deep":
        depth = draw(st.integers(0, 20_000))
        opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
        return opener * depth + b'"x"' + closer * draw(st.integers(0, depth))
    if kind == "numbers":
        digits = draw(st.integers(1, 20_000))
        return (
            b'{"n": '
            + b"9" * digits
            + draw(st.sampled_from([b"", b".5e999999", b"e-9999"]))
            + b', "s": "t"}'
        )
    if kind == "mutated":
        seeds = [json.dumps(draw(values)).encode()]
        seeds.append(b'{"title": "A", "body": ["x", {"k": "v"}], "n": [1, 2.5, null, true]}')
        return draw(mutated(seeds))
    if kind == "bytes":
        return draw(st.binary(max_size=1000))
    # invalid UTF-8, BOMs and lone surrogate escapes inside strings
    junk = draw(
        st.sampled_from([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\\ud800", b"\x00", b"\xef\xbb\xbf"])
    )
    return b'{"a": "' + junk * draw(st.integers(1, 400)) + b'", "b": "ok"}'


_PDF_SEEDS: list[bytes] = []


def _pdf_seeds() -> list[bytes]:
    if not _PDF_SEEDS:
        one = text_pdf([["Prime oscillators couple.", "A second line."], ["Page two (text)."]])
        _PDF_SEEDS.extend(
            [
                one,
                text_pdf([[]]),
                text_pdf([[f"line {i}" for i in range(30)]]),
                encrypted_pdf(one, user_password=""),
                encrypted_pdf(one, user_password="secret"),
            ]
        )
    return _PDF_SEEDS


@st.composite
def pdf_inputs(draw) -> bytes:
    kind = draw(st.sampled_from(["mutated", "mutated", "mutated", "header", "bytes"]))
    if kind == "mutated":
        return draw(mutated(_pdf_seeds()))
    if kind == "header":
        return b"%PDF-1." + draw(st.binary(max_size=3000))
    return draw(st.binary(max_size=2000))


TEXT_SEEDS = [
    "Grüße aus Köln. Line one.\r\nLine two — “quoted” 𝔘𝔫𝔦.\n\n".encode() * 80,
    "\ufeffBOM first, then plain words.\n".encode() * 40,
    "Ω≈ç√∫ UTF-16 text.\n".encode("utf-16") * 20,
]


@st.composite
def text_inputs(draw) -> bytes:
    kind = draw(st.sampled_from(["text", "bytes", "mixed", "boms", "mutated"]))
    if kind == "mutated":
        return draw(mutated(TEXT_SEEDS))
    if kind == "text":
        return draw(st.text(max_size=2000)).encode("utf-8", "surrogatepass")
    if kind == "bytes":
        return draw(st.binary(max_size=2000))
    if kind == "mixed":
        return b"".join(
            draw(
                st.lists(
                    st.sampled_from([b"word ", b"\r\n", b"\xff", b"\x00", b"\xe2\x82", b"\t"]),
                    max_size=400,
                )
            )
        )
    bom = draw(
        st.sampled_from(
            [b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"]
        )
    )
    return bom + draw(st.binary(max_size=1000))


TARGETS = {
    "html": ("fuzz.html", html_inputs()),
    "json": ("fuzz.json", json_inputs()),
    "pdf": ("fuzz.pdf", pdf_inputs()),
    "text": ("fuzz.txt", text_inputs()),
}

# --------------------------------------------------------------------------- runner


class FuzzStats:
    def __init__(self, target: str) -> None:
        self.target = target
        self.inputs = 0
        self.outcomes: Counter[str] = Counter()
        self.max_seconds = 0.0
        self.max_bytes = 0

    def as_dict(self) -> dict:
        return {
            "target": self.target,
            "inputs": self.inputs,
            "outcomes": dict(sorted(self.outcomes.items())),
            "max_seconds_per_input": round(self.max_seconds, 4),
            "largest_input_bytes": self.max_bytes,
        }


def fuzz_one(name: str, data: bytes, stats: FuzzStats) -> None:
    t0 = time.perf_counter()
    try:
        text = extract_bytes(name, data)  # the default per-file time budget applies
        assert isinstance(text, str) and text.strip()
        text.encode("utf-8")  # storable: no lone surrogates
        outcome = "text"
    except ExtractorFailure as err:
        raise AssertionError(f"undocumented failure: {err}") from err.__cause__
    except IngestError as err:
        assert isinstance(err, DOCUMENTED), type(err)
        assert err.path == name and err.reason
        outcome = type(err).__name__
    elapsed = time.perf_counter() - t0
    stats.inputs += 1
    stats.outcomes[outcome] += 1
    stats.max_seconds = max(stats.max_seconds, elapsed)
    stats.max_bytes = max(stats.max_bytes, len(data))


def run_target(target: str, examples: int) -> FuzzStats:
    name, strategy = TARGETS[target]
    stats = FuzzStats(target)

    @settings(
        max_examples=examples,
        deadline=None,  # time per input is bounded by the extractor's budget
        database=None,
        phases=[Phase.generate, Phase.target, Phase.shrink],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(strategy)
    def run(data: bytes) -> None:
        fuzz_one(name, data, stats)

    run()
    report = os.environ.get("SENTIENT_FUZZ_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as f:
            f.write(json.dumps(stats.as_dict()) + "\n")
    return stats


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_short(target):
    stats = run_target(target, FUZZ_SHORT)
    assert stats.inputs >= FUZZ_SHORT
    # The inputs really reach the extractor's both ends: text and refusals.
    assert stats.outcomes["text"] > 0 and sum(stats.outcomes.values()) > stats.outcomes["text"]


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_long(target):
    stats = run_target(target, FUZZ_LONG)
    assert stats.inputs >= FUZZ_LONG, stats.as_dict()
