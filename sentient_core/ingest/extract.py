"""Text extraction from .txt, .md, .json, .html/.htm and .pdf files.

This module picks the format by extension and applies the policies below; the
formats themselves are read by :mod:`.reading` (files, decoding, plain text),
:mod:`.json_text`, :mod:`.html_text` and :mod:`.pdf_text`, under the time
budget of :mod:`.deadline`.

Size policy
-----------
* Plain text (``.txt``, ``.md``) can be **streamed** with :func:`iter_text`: the
  file is read in blocks of ``block_chars`` characters and never held whole, so
  its size is unbounded (peak memory is a few blocks). :func:`iter_text` checks
  the whole file in a first streaming pass (binary content, encoding, emptiness)
  before it yields anything, so a bad file fails at the call, before any of its
  text has been handed out.
* JSON, HTML and PDF need the whole document to parse; they are loaded whole and
  refused with :class:`~sentient_core.ingest.errors.TooLarge` above
  ``MAX_WHOLE_FILE_BYTES`` (64 MiB) unless the caller passes another ``max_bytes``.
  :func:`extract_text` loads every format whole, plain text included, under the
  same cap.

Time policy
-----------
Extraction of a file loaded whole gets a time budget: ``time_budget`` seconds
(default 10) for inputs up to :data:`TIME_BUDGET_BYTES` (5 MiB), growing in
proportion above that (a 64 MiB page gets 128 s), so work that runs at
0.5 MiB/s or faster never reaches it, whatever the size. It is checked between stages and every few
thousand steps inside them (HTML elements, JSON values, PDF content-stream
operators). Past it the file is refused with
:class:`~sentient_core.ingest.errors.TimeBudgetExceeded`. Every parser used is
linear in its input (``bench/html_scaling.py`` measures HTML up to 32 MB), so
the budget is a backstop, not the normal way out. Streamed plain text has no
budget: it is decoded in one linear pass and has no size cap by design.

Whatever a parser raises on hostile bytes, the extractors raise only
:class:`~sentient_core.ingest.errors.IngestError` subclasses; an exception
nobody foresaw becomes :class:`~sentient_core.ingest.errors.ExtractorFailure`.

Decoding policy
---------------
A byte-order mark selects UTF-8/16/32; otherwise UTF-8. HTML may name another
charset in a ``<meta>`` tag: an encoding of the WHATWG Encoding Standard is
honoured (a UTF-16/32 label means UTF-8, as browsers do), an unknown label is
ignored (UTF-8), and a label naming a codec that is not a web text encoding
(``rot13``, ``base64``, ``hex``, ``zlib``, ``utf-7``, …) is refused as
:class:`~sentient_core.ingest.errors.MismatchedContent`. Undecodable bytes become U+FFFD only when the file
is mostly valid text: a NUL character, or more than ``MAX_REPLACED_FRACTION`` of
the characters undecodable (and more than ``REPLACED_ALLOWANCE``), means binary content and raises
:class:`~sentient_core.ingest.errors.MismatchedContent`. Line ends are normalised
to ``\\n``.

JSON that does not even begin like a JSON value is ``MismatchedContent``; JSON
that begins like one but fails to parse (truncated, malformed) is ``CorruptFile``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from typing import Annotated, Literal

import msgspec

from sentient_core.errors import ArgumentError
from sentient_core.ingest.deadline import (
    DEFAULT_TIME_BUDGET,
    TIME_BUDGET_BYTES,
    Clock,
    Deadline,
)
from sentient_core.ingest.errors import (
    CorruptFile,
    EmptyFile,
    ExtractorFailure,
    IngestError,
    TooLarge,
    UnreadableFile,
    UnsupportedFormat,
)
from sentient_core.ingest.html_text import html_charset, html_text
from sentient_core.ingest.json_text import json_text
from sentient_core.ingest.pdf_text import pdf_text
from sentient_core.ingest.reading import (
    MAX_REPLACED_FRACTION,
    MAX_WHOLE_FILE_BYTES,
    REPLACED_ALLOWANCE,
    bom_encoding,
    check_text_stream,
    decode_text,
    open_regular,
    read_bytes,
    stream_text,
)

DEFAULT_BLOCK_CHARS = 1 << 20

Kind = Literal["txt", "md", "json", "html", "pdf"]

KIND_BY_EXTENSION: dict[str, Kind] = {
    ".txt": "txt",
    ".md": "md",
    ".json": "json",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}

SUPPORTED: frozenset[str] = frozenset(KIND_BY_EXTENSION)
"""Supported file extensions, lower case with the dot."""

STREAMED_KINDS: frozenset[str] = frozenset({"txt", "md"})


class ExtractedDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The text of one file.

    Attributes
    ----------
    path : str
        The file it came from.
    kind : str
        ``"txt"``, ``"md"``, ``"json"``, ``"html"`` or ``"pdf"``.
    text : str
        Extracted text, line ends normalised to ``\\n``.
    pages : int
        Number of PDF pages; 1 for formats without pages.
    bytes : int
        Size of the file in bytes.
    """

    path: str
    kind: Kind
    text: str
    pages: Annotated[int, msgspec.Meta(ge=1)]
    bytes: Annotated[int, msgspec.Meta(ge=1)]


def kind_of(path: str | os.PathLike[str]) -> Kind:
    """Return the format of ``path`` from its extension.

    Raises
    ------
    UnsupportedFormat
        If the extension is not in :data:`SUPPORTED`.
    """
    ext = os.path.splitext(os.fspath(path))[1].lower()
    try:
        return KIND_BY_EXTENSION[ext]
    except KeyError:
        shown = f"'{ext}'" if ext else "no extension"
        raise UnsupportedFormat(
            path, f"unsupported format ({shown}); supported: {', '.join(sorted(SUPPORTED))}"
        ) from None


def extract_text(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = MAX_WHOLE_FILE_BYTES,
    time_budget: float | None = DEFAULT_TIME_BUDGET,
    clock: Clock = time.monotonic,
) -> ExtractedDoc:
    """Extract the text of one file, loading it whole.

    Parameters
    ----------
    path : str or os.PathLike
        A .txt, .md, .json, .html, .htm or .pdf file.
    max_bytes : int
        Refuse files larger than this (default 64 MiB), before reading them.
    time_budget : float or None
        Seconds the extraction may take (reading excluded), for inputs up to
        :data:`TIME_BUDGET_BYTES`, proportionally more above; ``None``: no limit.
    clock : callable
        Monotonic clock in seconds used for the budget (injectable for tests).

    Returns
    -------
    ExtractedDoc

    Raises
    ------
    IngestError
        A subclass naming the file and the reason (see :mod:`.errors`).
    """
    kind = kind_of(path)
    data = read_bytes(path, max_bytes)
    text, pages = _extract(path, kind, data, Deadline(path, time_budget, clock, len(data)))
    return ExtractedDoc(path=os.fspath(path), kind=kind, text=text, pages=pages, bytes=len(data))


def extract_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    time_budget: float | None = DEFAULT_TIME_BUDGET,
    clock: Clock = time.monotonic,
) -> str:
    """Text of content already read, by the same rules as :func:`extract_text`.

    For callers that must extract exactly the bytes they checked (the
    chaperone's fetcher, the integrator's read stage) instead of opening
    ``path`` again. The format comes from ``path``'s extension; ``path`` also
    names the file in errors.

    Raises
    ------
    IngestError
        A subclass naming the file and the reason (see :mod:`.errors`).
    """
    kind = kind_of(path)
    if not data:
        raise EmptyFile(path, "empty file (0 bytes)")
    return _extract(path, kind, data, Deadline(path, time_budget, clock, len(data)))[0]


def _extract(
    path: str | os.PathLike[str], kind: str, data: bytes, deadline: Deadline
) -> tuple[str, int]:
    """(text, pages) of ``data`` in format ``kind``; raises only IngestError subclasses."""
    try:
        text, pages = _extract_kind(path, kind, data, deadline)
    except IngestError:
        raise
    except MemoryError:
        raise TooLarge(path, "ran out of memory while extracting") from None
    except RecursionError:
        raise CorruptFile(path, "structure nested too deeply to extract") from None
    except Exception as exc:
        # The safety net: hostile bytes must never take a run down. The fuzz
        # tests assert this never fires; __cause__ keeps the original error.
        raise ExtractorFailure(
            path, f"extractor failed unexpectedly ({type(exc).__name__}: {exc})"
        ) from exc
    if _SURROGATE.search(text):
        # A lone surrogate (a JSON "\\ud800" escape, a broken UTF-16 string in
        # a PDF) cannot be encoded, so it would fail at commit: make it U+FFFD.
        text = _SURROGATE.sub("\ufffd", text)
    if not text.strip():
        raise EmptyFile(path, _no_text_reason(kind, pages))
    return text, pages


_SURROGATE = re.compile("[\ud800-\udfff]")


def _extract_kind(
    path: str | os.PathLike[str], kind: str, data: bytes, deadline: Deadline
) -> tuple[str, int]:
    pages = 1
    if kind in STREAMED_KINDS:
        text = decode_text(path, data)
    elif kind == "json":
        source = decode_text(path, data)
        deadline.check("decoding")
        text = json_text(path, source, deadline)
    elif kind == "html":
        source = decode_text(path, data, fallback=html_charset(path, data))
        deadline.check("decoding")
        text = html_text(path, source, deadline)
    else:
        text, pages = pdf_text(path, data, deadline)
    deadline.check(kind)
    return text, pages


def iter_text(
    path: str | os.PathLike[str],
    *,
    block_chars: int = DEFAULT_BLOCK_CHARS,
    max_bytes: int | None = None,
    time_budget: float | None = DEFAULT_TIME_BUDGET,
) -> Iterator[str]:
    """Return an iterator over the text of a file in pieces of at most ``block_chars``.

    Plain text (.txt, .md) is streamed and never held whole; other formats are
    extracted whole (see the module's size policy) and then sliced. All checks
    run in this call, so a bad file raises here, before any text is returned.
    The concatenated pieces equal ``extract_text(path).text``.

    Parameters
    ----------
    path : str or os.PathLike
        A supported file.
    block_chars : int
        Largest piece, in characters.
    max_bytes : int or None
        Size cap; ``None`` means unlimited for streamed plain text and
        ``MAX_WHOLE_FILE_BYTES`` for formats loaded whole.
    time_budget : float or None
        Extraction time budget for formats loaded whole (see the module's
        time policy); streamed plain text has none.

    Returns
    -------
    Iterator[str]

    Raises
    ------
    IngestError
        A subclass naming the file and the reason.
    """
    if block_chars < 1:
        raise ArgumentError(f"block_chars must be >= 1, got {block_chars}")
    kind = kind_of(path)
    if kind not in STREAMED_KINDS:
        cap = MAX_WHOLE_FILE_BYTES if max_bytes is None else max_bytes
        text = extract_text(path, max_bytes=cap, time_budget=time_budget).text
        return (text[i : i + block_chars] for i in range(0, len(text), block_chars))
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise TooLarge(path, f"{size} bytes exceeds the cap of {max_bytes} bytes")
        if size == 0:
            raise EmptyFile(path, "empty file (0 bytes)")
        try:
            encoding = bom_encoding(f.read(4)) or "utf-8"
        except OSError as exc:
            raise UnreadableFile(path, f"cannot read: {exc.strerror or exc}") from None
    check_text_stream(path, encoding, block_chars)
    return stream_text(path, encoding, block_chars)


def _no_text_reason(kind: str, pages: int) -> str:
    if kind == "pdf":
        return f"no extractable text in {pages} page(s) (scanned images?)"
    if kind == "json":
        return "no text (the JSON holds no strings)"
    if kind == "html":
        return "no visible text in the HTML"
    return "no text (only whitespace)"


__all__ = [
    "DEFAULT_BLOCK_CHARS",
    "DEFAULT_TIME_BUDGET",
    "KIND_BY_EXTENSION",
    "MAX_REPLACED_FRACTION",
    "MAX_WHOLE_FILE_BYTES",
    "REPLACED_ALLOWANCE",
    "STREAMED_KINDS",
    "SUPPORTED",
    "TIME_BUDGET_BYTES",
    "ExtractedDoc",
    "Kind",
    "extract_bytes",
    "extract_text",
    "iter_text",
    "kind_of",
    "read_bytes",
]
