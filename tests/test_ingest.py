"""Ingest: extraction of every format from real files, the error tree, chunking
(rule, overlap, streaming == whole, progress), keywords, folder walking, and a
large file streamed in bounded memory."""

from __future__ import annotations

import codecs
import itertools
import json
import os
import pickle
import random
import re
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_core.ingest import (
    STOP_WORDS,
    Chunk,
    CorruptFile,
    EmptyFile,
    EncryptedFile,
    IngestError,
    MismatchedContent,
    TooLarge,
    UnreadableFile,
    UnsupportedFormat,
    chunk_text,
    extract_text,
    iter_chunks,
    iter_files,
    iter_text,
    tokenize,
    topic_and_keywords,
)
from sentient_core.ingest.extract import MAX_WHOLE_FILE_BYTES
from tests.pdfgen import encrypted_pdf, text_pdf


def write(path, data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return str(path)


def raises_naming(exc_type, path, fragment):
    """pytest.raises that also checks the message names the file and the reason."""

    class _Check:
        def __enter__(self):
            self._ctx = pytest.raises(exc_type)
            self.info = self._ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self._ctx.__exit__(*exc)
            message = str(self.info.value)
            assert str(path) in message, message
            assert fragment.lower() in message.lower(), message
            assert self.info.value.path == str(path)
            return handled

    return _Check()


# --------------------------------------------------------------------------- text formats


def test_txt_with_bom_and_crlf_is_decoded_and_normalised(tmp_path):
    body = "First line é\r\nSecond line\rThird\r\n"
    p = write(tmp_path / "a.txt", codecs.BOM_UTF8 + body.encode("utf-8"))
    doc = extract_text(p)
    assert doc.text == "First line é\nSecond line\nThird\n"
    assert (doc.kind, doc.pages, doc.bytes, doc.path) == ("txt", 1, os.path.getsize(p), p)


def test_utf16_with_bom_is_text_not_binary(tmp_path):
    p = write(tmp_path / "u16.txt", "Grüße aus Köln.\n".encode("utf-16"))
    assert extract_text(p).text == "Grüße aus Köln.\n"
    assert "".join(iter_text(p, block_chars=3)) == "Grüße aus Köln.\n"


def test_markdown_is_kept_verbatim(tmp_path):
    body = "# Title\n\nSome *emphasis* and a [link](http://x).\n"
    doc = extract_text(write(tmp_path / "n.md", body))
    assert (doc.kind, doc.text) == ("md", body)


def test_mostly_valid_utf8_gets_replacement_characters(tmp_path):
    data = ("plain ascii text " * 20).encode() + b"\xff\xfe" + b" and more text"
    doc = extract_text(write(tmp_path / "m.txt", data))
    assert doc.text.count("\ufffd") == 2
    assert doc.text.endswith("and more text")


def test_mostly_invalid_bytes_are_binary(tmp_path):
    rng = random.Random(7)
    data = bytes(rng.randrange(0x80, 0x100) for _ in range(4000))  # no NUL, no UTF-8
    p = write(tmp_path / "x.txt", data)
    with raises_naming(MismatchedContent, p, "not valid UTF-8"):
        extract_text(p)
    with raises_naming(MismatchedContent, p, "not valid UTF-8"):
        iter_text(p)


def test_binary_txt_with_nul_bytes_is_mismatched(tmp_path):
    p = write(tmp_path / "bin.txt", b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)))
    with raises_naming(MismatchedContent, p, "binary"):
        extract_text(p)


def test_iter_text_checks_the_whole_file_before_yielding(tmp_path):
    # The NUL sits far past the first block: iter_text must refuse at the call,
    # before any text is handed out.
    data = b"clean text. " * 10_000 + b"\x00" + b"more text"
    p = write(tmp_path / "late.txt", data)
    with raises_naming(MismatchedContent, p, "NUL"):
        iter_text(p, block_chars=1024)


@pytest.mark.parametrize("name", ["e.txt", "e.md", "e.json", "e.html", "e.htm", "e.pdf"])
def test_empty_file_of_every_format(tmp_path, name):
    p = write(tmp_path / name, b"")
    with raises_naming(EmptyFile, p, "empty"):
        extract_text(p)
    with raises_naming(EmptyFile, p, "empty"):
        iter_text(p)


def test_whitespace_only_text_is_empty(tmp_path):
    p = write(tmp_path / "ws.txt", " \n\t\r\n  ")
    with raises_naming(EmptyFile, p, "whitespace"):
        extract_text(p)
    with raises_naming(EmptyFile, p, "whitespace"):
        iter_text(p)


@pytest.mark.parametrize(
    "data",
    [
        "a\r\nb\rc\n\r\nd",  # CR/LF pairs that straddle block edges
        "αβγ δέζ ηθι — “quoted” 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 " * 50,  # multi-byte sequences cut by blocks
        "x" * 1000,
    ],
)
@pytest.mark.parametrize("block_chars", [1, 2, 3, 7, 64, 1 << 20])
def test_streamed_text_equals_whole_extraction(tmp_path, data, block_chars):
    p = write(tmp_path / "s.txt", codecs.BOM_UTF8 + data.encode("utf-8") + b"\xc3 tail")
    pieces = list(iter_text(p, block_chars=block_chars))
    assert all(1 <= len(piece) <= block_chars for piece in pieces)
    whole = extract_text(p).text
    assert "".join(pieces) == whole
    assert "\r" not in whole
    assert whole.endswith("\ufffd tail")


# --------------------------------------------------------------------------- JSON


def test_json_strings_are_flattened_in_order(tmp_path):
    doc = {
        "title": "Prime resonance",
        "meta": {"year": 2024, "tags": ["primes", "phase"], "ok": True, "none": None},
        "sections": [{"heading": "Intro", "body": "Oscillators couple."}, 3.5],
    }
    p = write(tmp_path / "d.json", json.dumps(doc))
    text = extract_text(p).text
    assert text.split("\n") == [
        "title: Prime resonance",
        "meta",
        "year",
        "tags",
        "primes",
        "phase",
        "ok",
        "none",
        "sections",
        "heading: Intro",
        "body: Oscillators couple.",
    ]


def test_json_duplicate_keys_and_huge_numbers_are_kept_or_ignored(tmp_path):
    p = write(tmp_path / "d.json", '{"a": "one", "a": "two", "n": ' + "9" * 5000 + "}")
    assert extract_text(p).text == "a: one\na: two\nn"


def test_json_without_strings_is_empty(tmp_path):
    p = write(tmp_path / "nums.json", "[1, 2, 3.5, null]")
    with raises_naming(EmptyFile, p, "no strings"):
        extract_text(p)


def test_text_in_a_json_file_is_mismatched(tmp_path):
    p = write(tmp_path / "notes.json", "These are just notes, not JSON at all.")
    with raises_naming(MismatchedContent, p, "not JSON"):
        extract_text(p)


@pytest.mark.parametrize("body", ['{"a": "b", "c": ', '[1, 2, "x"', '{"a" "b"}', "[" * 100_000])
def test_broken_json_is_corrupt(tmp_path, body):
    p = write(tmp_path / "broken.json", body)
    with raises_naming(CorruptFile, p, "malformed JSON"):
        extract_text(p)


# --------------------------------------------------------------------------- HTML

HTML_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Holographic  memory</title>
<style>body { color: red; }</style>
<script>var hidden = "do not index";</script></head>
<body>
<h1>Traces &amp; codes</h1>
<p>A trace is   stored
as a <b>code</b> row&nbsp;&mdash; recalled by &lt;similarity&gt;.</p>
<p>Line one<br>Line two<br/>Line three</p>
<!-- a comment that must vanish -->
<noscript>enable scripts</noscript>
<ul><li>first item</li><li>second item</li></ul>
<table><tr><td>cell a</td><td>cell b</td></tr></table>
<pre>code line 1
code line 2</pre>
</body></html>
"""


def test_html_visible_text_with_paragraph_breaks(tmp_path):
    doc = extract_text(write(tmp_path / "page.html", HTML_PAGE))
    assert doc.kind == "html"
    assert doc.text.split("\n\n") == [
        "Holographic memory",
        "Traces & codes",
        "A trace is stored as a code row — recalled by <similarity>.",
        "Line one\nLine two\nLine three",
        "first item",
        "second item",
        "cell a cell b",
        "code line 1\ncode line 2",
    ]
    for hidden in ("color: red", "do not index", "comment", "enable scripts"):
        assert hidden not in doc.text


def test_html_meta_charset_is_honoured(tmp_path):
    page = '<html><head><meta charset="windows-1252"></head><body><p>café – naïve</p></body></html>'
    p = write(tmp_path / "old.htm", page.encode("cp1252"))
    assert extract_text(p).text == "café – naïve"


def test_html_without_visible_text_is_empty(tmp_path):
    p = write(tmp_path / "blank.html", "<html><script>x=1</script><p>  </p></html>")
    with raises_naming(EmptyFile, p, "no visible text"):
        extract_text(p)


def test_binary_html_is_mismatched(tmp_path):
    p = write(tmp_path / "img.html", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with raises_naming(MismatchedContent, p, "binary"):
        extract_text(p)


# --------------------------------------------------------------------------- PDF

PAGES = [
    ["Prime oscillators (resonance) couple.", "Second line on page one."],
    ["Page two talks about holographic memory."],
    ["Page three: the end."],
]


def test_multipage_pdf_text_is_extracted(tmp_path):
    p = write(tmp_path / "doc.pdf", text_pdf(PAGES))
    doc = extract_text(p)
    assert doc.kind == "pdf"
    assert doc.pages == 3
    parts = doc.text.split("\n\n")
    assert len(parts) == 3
    for lines, part in zip(PAGES, parts, strict=True):
        for line in lines:
            assert line in part
    # iter_text on a PDF yields the same text in slices.
    assert "".join(iter_text(p, block_chars=10)) == doc.text


def test_pdf_with_a_user_password_is_encrypted(tmp_path):
    p = write(tmp_path / "locked.pdf", encrypted_pdf(text_pdf(PAGES), user_password="s3cret"))
    with raises_naming(EncryptedFile, p, "password"):
        extract_text(p)


def test_pdf_locked_only_by_owner_password_is_readable(tmp_path):
    p = write(tmp_path / "owner.pdf", encrypted_pdf(text_pdf(PAGES), user_password=""))
    doc = extract_text(p)
    assert "holographic memory" in doc.text
    assert doc.pages == 3


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_truncated_pdf_is_corrupt(tmp_path, keep):
    data = text_pdf(PAGES)
    p = write(tmp_path / "cut.pdf", data[: int(len(data) * keep)])
    with raises_naming(CorruptFile, p, "unreadable PDF"):
        extract_text(p)


def test_pdf_with_garbage_after_the_header_is_corrupt(tmp_path):
    rng = random.Random(3)
    p = write(tmp_path / "junk.pdf", b"%PDF-1.7\n" + rng.randbytes(5000))
    with raises_naming(CorruptFile, p, "unreadable PDF"):
        extract_text(p)


def test_a_pdf_that_trips_an_assert_inside_pypdf_is_corrupt_not_an_extractor_failure():
    # Found by the 10,000-input PDF fuzzer: pypdf's own "assert pdf is not None, 'mypy'"
    # fails on this broken object graph.
    from pathlib import Path

    from sentient_core.ingest import ExtractorFailure

    p = Path(__file__).parent / "data" / "pdf" / "assert-in-pypdf.pdf"
    with pytest.raises(CorruptFile, match=r"unreadable PDF \(AssertionError") as info:
        extract_text(p)
    assert not isinstance(info.value, ExtractorFailure)


def test_text_file_named_pdf_is_mismatched(tmp_path):
    p = write(tmp_path / "fake.pdf", "This is plain text pretending to be a PDF.\n")
    with raises_naming(MismatchedContent, p, "not a PDF"):
        extract_text(p)


def test_pdf_without_text_is_empty(tmp_path):
    p = write(tmp_path / "scan.pdf", text_pdf([[], []]))
    with raises_naming(EmptyFile, p, "no extractable text in 2 page"):
        extract_text(p)


# --------------------------------------------------------------------------- other errors


def test_unsupported_missing_and_directory(tmp_path):
    p = write(tmp_path / "sheet.xlsx", b"PK\x03\x04")
    with raises_naming(UnsupportedFormat, p, "'.xlsx'"):
        extract_text(p)
    missing = str(tmp_path / "missing.txt")
    with raises_naming(UnreadableFile, missing, "No such file"):
        extract_text(missing)
    with raises_naming(UnreadableFile, missing, "No such file"):
        iter_text(missing)
    folder = tmp_path / "folder.md"
    folder.mkdir()
    with raises_naming(UnreadableFile, str(folder), "directory"):
        extract_text(folder)


def test_size_caps(tmp_path):
    p = write(tmp_path / "big.txt", "word " * 1000)
    with raises_naming(TooLarge, p, "cap of 100 bytes"):
        extract_text(p, max_bytes=100)
    with raises_naming(TooLarge, p, "cap of 100 bytes"):
        iter_text(p, max_bytes=100)
    assert "".join(iter_text(p)) == "word " * 1000  # streamed text has no default cap
    # Whole-file formats are refused above 64 MiB before anything is read (sparse file).
    sparse = tmp_path / "huge.json"
    with open(sparse, "wb") as f:
        f.truncate(MAX_WHOLE_FILE_BYTES + 1)
    with raises_naming(TooLarge, str(sparse), "exceeds the cap"):
        iter_text(sparse)


def test_errors_form_a_tree_and_survive_pickling(tmp_path):
    err = EncryptedFile(tmp_path / "x.pdf", "encrypted PDF (password required)")
    for cls in (UnsupportedFormat, UnreadableFile, EmptyFile, TooLarge, MismatchedContent):
        assert issubclass(cls, IngestError)
    assert isinstance(err, IngestError)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is EncryptedFile
    assert (back.path, back.reason, str(back)) == (err.path, err.reason, str(err))


# --------------------------------------------------------------------------- chunking


def expected_end(text: str, start: int, size: int) -> int:
    """Brute-force statement of the break rule for a non-final window."""
    half = start + size // 2
    for end in range(start + size, half, -1):
        mark = end - 1
        if text[mark] in ".!?" and mark >= half and text[end].isspace():
            return end
        if text[mark] == "\n":
            j = mark - 1
            while j >= half and text[j] in " \t":
                j -= 1
            if j >= half and text[j] == "\n":
                return end
    return start + size


def check_chunks(text: str, chunks: list[Chunk], size: int, overlap: int) -> None:
    """Every chunk obeys the rule; every character of the text is covered."""
    assert [c.index for c in chunks] == list(range(len(chunks)))
    covered_to = 0
    for prev, chunk in zip([None, *chunks], chunks, strict=False):
        assert chunk.text == text[chunk.start : chunk.end]
        assert 1 <= len(chunk.text) <= size
        assert not chunk.text.isspace()
        if chunk.end < len(text):
            assert chunk.end == expected_end(text, chunk.start, size)
        if prev is not None:
            expected_start = max(prev.end - overlap, prev.start + 1)
            if chunk.start != expected_start:
                # Only dropped whitespace-only windows may lie in between.
                assert chunk.start > expected_start
                assert text[expected_start : chunk.start].isspace()
            elif prev.end - prev.start > overlap:
                # Consecutive chunks share exactly `overlap` characters.
                assert len(text[chunk.start : prev.end]) == overlap
        # Only whitespace may be left out (dropped whitespace-only windows).
        assert text[covered_to : chunk.start].strip() == ""
        covered_to = max(covered_to, chunk.end)
    assert text[covered_to:].strip() == ""


def test_short_text_is_one_chunk_and_blank_text_none():
    assert chunk_text("A short text.") == [Chunk(index=0, start=0, end=13, text="A short text.")]
    assert chunk_text("") == []
    assert chunk_text(" \n\t \n") == []
    assert list(iter_chunks([])) == []


def test_break_after_sentence_in_second_half():
    # Window of 100: a sentence end at 79 (second half) and another at 29 (first half).
    text = "a" * 29 + ". " + "b" * 48 + ". " + "c" * 100
    first = chunk_text(text, size=100, overlap=10)[0]
    assert (first.start, first.end) == (0, 80)
    assert first.text.endswith("b.")


def test_no_break_when_sentence_end_only_in_first_half():
    text = "a" * 29 + ". " + "b" * 200
    first = chunk_text(text, size=100, overlap=10)[0]
    assert (first.start, first.end) == (0, 100)


def test_punctuation_without_whitespace_is_not_a_break():
    text = "pi is 3.14159 and " + "x" * 40 + "e.g.value" + "y" * 100
    first = chunk_text(text, size=100, overlap=10)[0]
    assert first.end == 100


def test_blank_line_is_a_break():
    text = "p" * 60 + "\n \t\n" + "q" * 100
    first = chunk_text(text, size=100, overlap=10)[0]
    assert first.end == 64
    assert first.text.endswith("\n \t\n")


@pytest.mark.parametrize(("lead", "end"), [(49, 100), (50, 52)])
def test_blank_line_must_start_in_the_second_half(lead, end):
    # Window 100, second half from 50: a blank line whose first newline is at 49
    # is not a break; one starting at 50 is.
    text = "p" * lead + "\n\n" + "q" * 100
    assert chunk_text(text, size=100, overlap=10)[0].end == end


@pytest.mark.parametrize(("after", "end"), [(" ", 100), ("x", 70)])
def test_whitespace_after_the_last_window_character_is_looked_at(after, end):
    # A '.' at index 99 (the window's last character) breaks only if index 100 is
    # whitespace; otherwise the earlier sentence end at 69 wins.
    text = "a" * 69 + ". " + "b" * 28 + "." + after + "c" * 50
    assert chunk_text(text, size=100, overlap=10)[0].end == end


def test_default_chunks_overlap_by_exactly_200():
    rng = random.Random(11)
    words = ["prime", "resonance", "memory", "trace", "orientation", "field", "code"]
    sentences = [
        " ".join(rng.choice(words) for _ in range(rng.randint(4, 30))).capitalize()
        + rng.choice([".", "!", "?"])
        for _ in range(2000)
    ]
    text = " ".join(sentences)
    chunks = chunk_text(text)
    assert len(chunks) > 20
    check_chunks(text, chunks, 2000, 200)
    for prev, nxt in itertools.pairwise(chunks):
        assert len(nxt.text) <= 2000
        assert prev.end - nxt.start == 200
        assert nxt.text[:200] == prev.text[-200:]
        assert prev.text[-1] in ".!?"  # every cut fell on a sentence end


def test_progress_when_overlap_exceeds_the_chunk():
    # size 10, overlap 8: breaks after 7 characters force the start forward by one.
    text = "ab. " * 30
    chunks = chunk_text(text, size=10, overlap=8)
    check_chunks(text, chunks, 10, 8)
    assert any(c.end - c.start <= 8 for c in chunks[:-1])
    starts = [c.start for c in chunks]
    assert starts == sorted(set(starts))


def test_whitespace_only_windows_are_dropped():
    text = "head." + " " * 500 + "tail."
    chunks = chunk_text(text, size=100, overlap=10)
    check_chunks(text, chunks, 100, 10)
    assert chunks[0].text.startswith("head.") and chunks[-1].text.endswith("tail.")
    assert all(not c.text.isspace() for c in chunks)


def test_bad_chunk_parameters():
    for size, overlap in [(0, 0), (10, 10), (10, -1)]:
        with pytest.raises(ValueError, match=r"size|overlap"):
            chunk_text("text", size=size, overlap=overlap)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="ab .!?\n\t", max_size=600),
    cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=12),
    size=st.integers(min_value=2, max_value=60),
    overlap_frac=st.floats(min_value=0, max_value=0.95),
)
def test_streaming_equals_whole_and_obeys_the_rule(text, cuts, size, overlap_frac):
    overlap = min(size - 1, int(size * overlap_frac))
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    whole = chunk_text(text, size=size, overlap=overlap)
    assert list(iter_chunks(pieces, size=size, overlap=overlap)) == whole
    check_chunks(text, whole, size, overlap)


def test_streaming_equals_whole_on_a_long_text_in_odd_pieces(tmp_path):
    rng = random.Random(5)
    text = "".join(
        rng.choice(["word ", "Stop. ", "Why? ", "\n\n", "line\n", "x" * 30, "é€𝔘 "])
        for _ in range(20_000)
    )
    p = write(tmp_path / "long.md", text)
    whole = chunk_text(text)
    assert list(iter_chunks(iter_text(p, block_chars=777))) == whole
    check_chunks(text, whole, 2000, 200)


# --------------------------------------------------------------------------- keywords


def test_tokenize_rules():
    text = "Über CAFÉ naïve x 42 3.14 snake_case " + "z" * 41 + " " + "y" * 40
    assert tokenize(text) == ["über", "café", "naïve", "42", "14", "snake_case", "y" * 40]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ_9 .-\t\néÉß\u0130\u2160" + "x" * 5), max_size=200))
def test_tokenize_matches_the_plain_definition(text):
    # The ASCII fast path and the Unicode path both equal the one-line definition.
    plain = [w for w in re.findall(r"\w+", text.lower()) if 2 <= len(w) <= 40]
    assert tokenize(text) == plain
    ascii_only = text.encode("ascii", "ignore").decode()
    assert tokenize(ascii_only) == [
        w for w in re.findall(r"\w+", ascii_only.lower()) if 2 <= len(w) <= 40
    ]


def test_stop_words_list():
    assert len(STOP_WORDS) >= 150
    assert {"the", "and", "of", "is", "which"} <= STOP_WORDS
    assert all(w == w.lower() for w in STOP_WORDS)


def test_keywords_rank_by_frequency_then_first_occurrence():
    text = "beta alpha gamma alpha the the the beta delta 2024 2024 2024 epsilon"
    topic, words = topic_and_keywords(text, k=4)
    # alpha 2, beta 2 (beta first), then gamma, delta, epsilon once; stop words and numbers out.
    assert words == ["beta", "alpha", "gamma", "delta"]
    assert topic == "beta alpha gamma"


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("intro text here that runs on.\n\n## Phase Locking ##\n\nbody text.", "Phase Locking"),
        ("Memory Traces\n=============\n\nThe body text.", "Memory Traces"),
        ("Holographic Memory\n\nTraces are codes. Codes are rows.", "Holographic Memory"),
        ("A sentence that ends with a full stop.\n\nAnother one here.", "sentence ends full"),
    ],
)
def test_topic_is_the_first_heading_like_line(text, topic):
    assert topic_and_keywords(text)[0] == topic


def test_topic_and_keywords_of_nothing():
    assert topic_and_keywords("") == ("", [])
    assert topic_and_keywords("the of and") == ("", [])


# --------------------------------------------------------------------------- walking


def test_walk_is_recursive_sorted_and_reports_skips(tmp_path):
    root = tmp_path / "root"
    (root / "b_sub" / "deep").mkdir(parents=True)
    (root / "a_sub").mkdir()
    (root / ".git").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    for rel in [
        "z.txt",
        "a.MD",
        "image.png",
        "README",
        "a_sub/x.json",
        "b_sub/y.html",
        "b_sub/deep/doc.PDF",
        ".git/config.txt",
    ]:
        (root / rel).write_text("x")
    (outside / "secret.txt").write_text("s")
    (root / "b_sub" / "link_out.txt").symlink_to(outside / "secret.txt")
    (root / "b_sub" / "link_in.txt").symlink_to(root / "z.txt")
    (root / "linked_dir").symlink_to(outside, target_is_directory=True)
    (root / "dangling.txt").symlink_to(tmp_path / "nowhere.txt")
    os.mkfifo(root / "pipe.txt")

    entries = list(iter_files([root, root / "z.txt", tmp_path / "missing"]))
    got = [(os.path.relpath(e.path, tmp_path), e.skip_reason) for e in entries]
    assert got == [
        ("root/.git", "hidden entry, not walked"),
        ("root/README", "no extension"),
        ("root/a.MD", None),
        ("root/dangling.txt", "broken symlink"),
        ("root/image.png", "unsupported extension '.png'"),
        ("root/linked_dir", "symlinked folder, not followed"),
        ("root/pipe.txt", "not a regular file"),
        ("root/z.txt", None),
        ("root/a_sub/x.json", None),
        ("root/b_sub/link_out.txt", "symlink points outside the folder being ingested"),
        ("root/b_sub/y.html", None),
        ("root/b_sub/deep/doc.PDF", None),
        ("missing", "not found"),
    ]
    # link_in.txt points at z.txt, already listed; z.txt given again is not repeated.
    assert list(iter_files([root])) == entries[:-1]


def test_walk_respects_the_extension_filter(tmp_path):
    for name in ["a.txt", "b.md", "c.pdf"]:
        (tmp_path / name).write_text("x")
    found = [
        os.path.basename(e.path) for e in iter_files([tmp_path], exts={".MD"}) if not e.skipped
    ]
    assert found == ["b.md"]


# --------------------------------------------------------------------------- large input


@pytest.mark.slow
def test_large_text_file_is_streamed_in_bounded_memory(tmp_path):
    paragraph = "The quick brown fox jumps over the lazy dog near the river bank. " * 6 + "\n\n"
    block = paragraph * 1000
    target = 100 * 1024 * 1024
    p = tmp_path / "big.txt"
    with open(p, "w", encoding="utf-8") as f:
        for _ in range(target // len(block) + 1):
            f.write(block)
    size = os.path.getsize(p)
    assert size >= target

    tracemalloc.start()
    try:
        count = 0
        end = 0
        longest = 0
        for chunk in iter_chunks(iter_text(p), size=2000, overlap=200):
            count += 1
            end = chunk.end
            longest = max(longest, len(chunk.text))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert end == size  # ASCII: characters == bytes, and the whole file was chunked
    assert longest <= 2000
    assert count > size // 2000
    # A few 1 Mi-character blocks at most: far below the 100 MB file.
    assert peak < 32 * 1024 * 1024, f"peak traced memory {peak / 2**20:.1f} MiB"
