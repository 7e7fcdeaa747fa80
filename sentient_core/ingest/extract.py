"""Text extraction from .txt, .md, .json, .html/.htm and .pdf files.

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

import codecs
import io
import json
import logging
import os
import re
import stat
import struct
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from typing import Annotated, Literal

import lxml.etree
import msgspec
from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError, PyPdfError

from sentient_core.errors import ArgumentError
from sentient_core.ingest.errors import (
    CorruptFile,
    EmptyFile,
    EncryptedFile,
    ExtractorFailure,
    IngestError,
    MismatchedContent,
    TimeBudgetExceeded,
    TooLarge,
    UnreadableFile,
    UnsupportedFormat,
)

MAX_WHOLE_FILE_BYTES = 64 * 1024 * 1024
"""Cap for formats parsed whole (JSON, HTML, PDF, and plain text via ``extract_text``)."""

MAX_REPLACED_FRACTION = 0.05
"""Above this fraction of undecodable characters a file counts as binary..."""

REPLACED_ALLOWANCE = 4
"""...unless it has at most this many (a stray byte in a short note is not binary)."""

DEFAULT_BLOCK_CHARS = 1 << 20

DEFAULT_TIME_BUDGET = 10.0
"""Seconds one file's extraction may take (for inputs up to :data:`TIME_BUDGET_BYTES`)."""

TIME_BUDGET_BYTES = 5 << 20
"""Inputs larger than this get a proportionally larger budget (the slowest HTML
we measured, bench/html_scaling.py, runs at about 2 MiB per CPU second)."""

Clock = Callable[[], float]

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

# pypdf reports recoverable damage through the "pypdf" logger; without a handler
# Python's last-resort handler would print it to stderr in the middle of a
# progress bar. A NullHandler silences only that fallback: records still reach
# any handler the application configures on the root logger.
logging.getLogger("pypdf").addHandler(logging.NullHandler())


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
    text, pages = _extract(path, kind, data, _Deadline(path, time_budget, clock, len(data)))
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
    return _extract(path, kind, data, _Deadline(path, time_budget, clock, len(data)))[0]


class _Deadline:
    """The per-file time budget: ``check`` raises once it is spent."""

    __slots__ = ("budget", "clock", "path", "start")

    def __init__(
        self, path: str | os.PathLike[str], budget: float | None, clock: Clock, size: int
    ) -> None:
        if budget is not None and not budget > 0:
            raise ArgumentError(f"time_budget must be > 0 seconds or None, got {budget!r}")
        self.path = path
        self.budget = None if budget is None else budget * max(1.0, size / TIME_BUDGET_BYTES)
        self.clock = clock
        self.start = clock() if budget is not None else 0.0

    def check(self, stage: str) -> None:
        if self.budget is None:
            return
        elapsed = self.clock() - self.start
        if elapsed > self.budget:
            raise TimeBudgetExceeded(
                self.path,
                f"extraction exceeded its time budget of {self.budget:.3g} s "
                f"(stopped in {stage} after {elapsed:.2f} s)",
            )


def _extract(
    path: str | os.PathLike[str], kind: str, data: bytes, deadline: _Deadline
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
    path: str | os.PathLike[str], kind: str, data: bytes, deadline: _Deadline
) -> tuple[str, int]:
    pages = 1
    if kind in STREAMED_KINDS:
        text = _decode_text(path, data)
    elif kind == "json":
        source = _decode_text(path, data)
        deadline.check("decoding")
        text = _json_text(path, source, deadline)
    elif kind == "html":
        source = _decode_text(path, data, fallback=_html_charset(path, data))
        deadline.check("decoding")
        text = _html_text(path, source, deadline)
    else:
        text, pages = _pdf_text(path, data, deadline)
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
    with _open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise TooLarge(path, f"{size} bytes exceeds the cap of {max_bytes} bytes")
        if size == 0:
            raise EmptyFile(path, "empty file (0 bytes)")
        try:
            encoding = _bom_encoding(f.read(4)) or "utf-8"
        except OSError as exc:
            raise UnreadableFile(path, f"cannot read: {exc.strerror or exc}") from None
    _check_text_stream(path, encoding, block_chars)
    return _stream_text(path, encoding, block_chars)


# --------------------------------------------------------------------------- reading


def _open_regular(path: str | os.PathLike[str]) -> io.BufferedReader:
    """Open ``path`` for reading only if it is a regular file; never blocks.

    The type is checked with ``fstat`` on the opened descriptor, so the file
    checked is the file read. ``O_NONBLOCK`` keeps a FIFO from blocking the
    open; it has no effect on regular files and is cleared again.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise UnreadableFile(path, "is a directory, not a file") from None
    except OSError as exc:
        raise UnreadableFile(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise UnreadableFile(path, "is a directory, not a file")
        if not stat.S_ISREG(mode):
            # A FIFO or device would block or never end.
            raise UnreadableFile(path, "not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], max_bytes: int = MAX_WHOLE_FILE_BYTES) -> bytes:
    """Read a whole regular file, refusing it before reading if it is over ``max_bytes``.

    The size comes from ``fstat`` of the opened file, so a huge (even sparse)
    file is refused at once; at most ``max_bytes + 1`` bytes are ever read, in
    case the file grows meanwhile.

    Raises
    ------
    UnreadableFile, TooLarge, EmptyFile
    """
    with _open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise TooLarge(
                path, f"{size} bytes exceeds the cap of {max_bytes} bytes for whole-file formats"
            )
        try:
            data = f.read(max_bytes + 1)
        except OSError as exc:
            raise UnreadableFile(path, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise TooLarge(path, f"more than the cap of {max_bytes} bytes")
    if not data:
        raise EmptyFile(path, "empty file (0 bytes)")
    return data


# --------------------------------------------------------------------------- decoding

_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 LE starts with the UTF-16 LE mark, so it is tested first.
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _bom_encoding(head: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    return None


def _normalize_newlines(text: str) -> str:
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


class _TextCheck:
    """Running binary/undecodable/empty counts over decoded text."""

    __slots__ = ("chars", "has_text", "nul", "replaced")

    def __init__(self) -> None:
        self.chars = 0
        self.replaced = 0
        self.nul = False
        self.has_text = False

    def feed(self, piece: str) -> None:
        self.chars += len(piece)
        self.replaced += piece.count("\ufffd")
        if "\x00" in piece:
            self.nul = True
        if not self.has_text and not piece.isspace():
            self.has_text = bool(piece)

    def raise_if_bad(self, path: str | os.PathLike[str]) -> None:
        if self.nul:
            raise MismatchedContent(path, "binary content (NUL bytes), not text")
        if self.replaced > max(REPLACED_ALLOWANCE, MAX_REPLACED_FRACTION * self.chars):
            raise MismatchedContent(
                path,
                f"not text: {self.replaced} of {self.chars} characters are not valid UTF-8",
            )
        if not self.has_text:
            raise EmptyFile(path, "no text (only whitespace)")


def _decode_text(path: str | os.PathLike[str], data: bytes, fallback: str | None = None) -> str:
    encoding = _bom_encoding(data) or fallback or "utf-8"
    text = _normalize_newlines(data.decode(encoding, errors="replace"))
    check = _TextCheck()
    check.feed(text)
    check.raise_if_bad(path)
    return text


def _open_text(path: str | os.PathLike[str], encoding: str) -> io.TextIOWrapper:
    # newline=None: universal newlines, the same normalisation as _normalize_newlines.
    return io.TextIOWrapper(_open_regular(path), encoding=encoding, errors="replace", newline=None)


def _check_text_stream(path: str | os.PathLike[str], encoding: str, block_chars: int) -> None:
    check = _TextCheck()
    with _open_text(path, encoding) as f:
        try:
            while piece := f.read(block_chars):
                check.feed(piece)
                if check.nul:
                    break
        except OSError as exc:
            raise UnreadableFile(path, f"cannot read: {exc.strerror or exc}") from None
    check.raise_if_bad(path)


def _stream_text(path: str | os.PathLike[str], encoding: str, block_chars: int) -> Iterator[str]:
    with _open_text(path, encoding) as f:
        while piece := f.read(block_chars):
            yield piece


# --------------------------------------------------------------------------- JSON


class _JsonObject(list):
    """Key/value pairs of one JSON object, in file order (duplicates kept)."""

    __slots__ = ()


# A file that opens a JSON container but fails to parse is broken JSON; anything
# else that fails is not JSON at all.
_JSON_CONTAINER_START = re.compile(r"\s*[\[{]")


def _json_text(path: str | os.PathLike[str], source: str, deadline: _Deadline) -> str:
    try:
        # Numbers carry no words: skip converting them (also avoids the int-digit limit).
        value = json.loads(
            source,
            object_pairs_hook=_JsonObject,
            parse_int=lambda _s: None,
            parse_float=lambda _s: None,
            parse_constant=lambda _s: None,
        )
    except (ValueError, RecursionError) as exc:
        reason = f"{type(exc).__name__}: {exc}" if isinstance(exc, RecursionError) else str(exc)
        if _JSON_CONTAINER_START.match(source):
            raise CorruptFile(path, f"malformed JSON ({reason})") from None
        raise MismatchedContent(path, f"not JSON ({reason})") from None
    deadline.check("JSON parsing")
    return "\n".join(_json_lines(value, deadline))


def _json_lines(value: object, deadline: _Deadline) -> Iterator[str]:
    """Yield the strings of a JSON value depth-first in order; a key and its
    string value share a line ``key: value``."""
    stack: list[object] = [value]
    steps = 0
    while stack:
        steps += 1
        if not steps & 0xFFF:
            deadline.check("JSON walking")
        item = stack.pop()
        if isinstance(item, str):
            if item.strip():
                yield item
        elif isinstance(item, _JsonObject):
            for key, val in reversed(item):
                if isinstance(val, str) and key.strip() and val.strip():
                    stack.append(f"{key}: {val}")
                elif isinstance(val, str):
                    stack.append(f"{key}{val}")
                else:
                    stack.append(val)
                    stack.append(key)
        elif isinstance(item, list):
            stack.extend(reversed(item))


# --------------------------------------------------------------------------- HTML
#
# Parsing: lxml's HTML parser (libxml2 >= 2.14, an HTML5 tokenizer), chosen on
# measurements (bench/html_scaling.py): linear on every adversarial shape we
# tried, where lexbor (selectolax) is quadratic in nesting depth (1 MB of
# nested <div> took 100 s) and the standard library's HTMLParser is quadratic
# on "<a<a<a…". libxml2 also caps nesting depth (2048 with huge_tree, which
# lifts its 10 MB text-node limit); past the cap it stops, so such a page is
# refused instead of silently cut. Comments (an unclosed "<!--" runs to the
# end of the file) and processing instructions are dropped by the parser.
#
# Main content: the page's <main> or role="main" element (the one with the most
# text if several), else its only <article>, else the whole <body> (then the
# <title> leads the text; an empty <main> also falls back to the body). Inside
# it, navigation and page furniture are dropped: <nav>, <footer>, <aside> and
# <header> (these two only when the whole body is used: inside <main> they are
# footnotes and the page's own title), ARIA landmark roles of the same meaning
# (navigation, banner, contentinfo, complementary, search), hidden elements
# (hidden, aria-hidden="true"), and non-text elements (scripts, styles, form
# controls, embedded SVG/MathML/frames).

_HTML_SKIP = (
    "script", "style", "noscript", "template", "svg", "math", "iframe", "object",
    "canvas", "button", "select", "textarea",
)  # fmt: skip
_HTML_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1",
        "h2", "h3", "h4", "h5", "h6", "head", "header", "hr", "html", "li", "main",
        "nav", "ol", "p", "pre", "section", "summary", "table", "title", "tr", "ul",
    }
)  # fmt: skip
_HTML_CELL = frozenset({"td", "th"})
_MAIN_CANDIDATES = 16
_BOILERPLATE_TAGS = frozenset({"nav", "footer"})
# Outside <main>, these are page furniture too; inside it, an <aside> is a
# footnote or a note and a <header> holds the page's own title.
_BODY_BOILERPLATE_TAGS = _BOILERPLATE_TAGS | {"aside", "header"}
_BOILERPLATE_ROLES = frozenset({"navigation", "complementary", "contentinfo", "search", "banner"})
# One scan finds every element whose role, tag or attributes matter for the
# main-content choice or boilerplate (the tag-only cases are decided in the walk).
_FLAGGED_XPATH = lxml.etree.XPath(
    "descendant-or-self::*[self::main or self::article or @role or @hidden or @aria-hidden]"
)


# --- charset

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)

# Python codec names of the WHATWG Encoding Standard's ASCII-compatible
# encodings. Latin-1 and ASCII labels mean windows-1252 on the web; a
# <meta> that names UTF-16/32 (found by an ASCII scan, so it cannot be
# right) means UTF-8, as the HTML standard says.
_WEB_ENCODINGS: dict[str, str] = {
    name: name
    for name in (
        "utf-8", "cp866", "iso8859-2", "iso8859-3", "iso8859-4", "iso8859-5", "iso8859-6",
        "iso8859-7", "iso8859-8", "iso8859-10", "iso8859-13", "iso8859-14", "iso8859-15",
        "iso8859-16", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic", "cp874", "tis-620",
        "iso8859-11", "cp1250", "cp1251", "cp1252", "cp1253", "cp1254", "cp1255", "cp1256",
        "cp1257", "cp1258", "gbk", "gb2312", "gb18030", "big5", "big5hkscs", "euc_jp",
        "iso2022_jp", "shift_jis", "cp932", "euc_kr", "cp949",
    )
} | {
    "iso8859-1": "cp1252", "ascii": "cp1252", "utf-16": "utf-8", "utf-16-le": "utf-8",
    "utf-16-be": "utf-8", "utf-32": "utf-8", "utf-32-le": "utf-8", "utf-32-be": "utf-8",
}  # fmt: skip


def _html_charset(path: str | os.PathLike[str], data: bytes) -> str | None:
    """The codec a ``<meta>`` charset names, ``None`` if none or unknown.

    Raises MismatchedContent when the label names a codec that is not a web
    text encoding (``rot13``, ``base64``, ``hex``, ``zlib``, ``utf-7``, …):
    decoding by it would fail or turn the page into something else.
    """
    match = _META_CHARSET.search(data[:4096])
    if not match:
        return None
    label = match.group(1).decode("ascii")
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None  # an unknown label is ignored, as browsers do
    web = _WEB_ENCODINGS.get(name)
    if web is None:
        raise MismatchedContent(
            path, f"declares charset '{label}', which is not a text encoding for web pages"
        )
    return web


# --- text

# Paragraph and line marks inside the collected text: Unicode noncharacters,
# reserved for internal use (any in the page itself are removed first).
_PARA = "\ufdd0"
_LINE = "\ufdd1"
_SPACES = re.compile(r"\s+")
_SPACE_AT_MARK = re.compile(f" ?([{_PARA}{_LINE}]) ?")
_PARA_RUN = re.compile(f"{_LINE}*{_PARA}[{_PARA}{_LINE}]*")
_LINE_RUN = re.compile(f"{_LINE}+")
_BLOCK, _PRE, _BR, _CELL = 1, 2, 3, 4
_ACTION: dict[str, int] = {tag: _BLOCK for tag in _HTML_BLOCK} | {
    "pre": _PRE,
    "br": _BR,
    "td": _CELL,
    "th": _CELL,
}


def _parse_html(path: str | os.PathLike[str], source: str):
    """The document's root element, or ``None`` when there is no element at all."""
    parser = lxml.etree.HTMLParser(
        encoding="utf-8",
        remove_comments=True,
        remove_pis=True,
        no_network=True,
        huge_tree=True,  # lifts the 10 MB text-node cap; the depth cap stays (2048)
        default_doctype=False,
    )
    try:
        root = lxml.etree.fromstring(source.encode("utf-8"), parser=parser)
    except lxml.etree.XMLSyntaxError:
        root = None  # "Document is empty": no elements at all
    last = parser.error_log.last_error
    if last is not None and last.type_name == "ERR_RESOURCE_LIMIT":
        raise CorruptFile(path, f"HTML beyond the parser's limits ({last.message.split(',')[0]})")
    return root


def _text_length(el) -> float:
    return el.xpath("string-length(string())")


def _outermost(candidates: list) -> list:
    kept: list = []
    for el in candidates[:_MAIN_CANDIDATES]:
        if not any(k in kept for k in el.iterancestors()):
            kept.append(el)
    return kept


def _is_hidden(el) -> bool:
    return (
        el.get("role") in _BOILERPLATE_ROLES
        or el.get("hidden") is not None
        or el.get("aria-hidden") == "true"
    )


def _main_content(body, flagged: list) -> tuple[object, bool]:
    """(element holding the main content, whether it is narrower than <body>)."""
    mains = _outermost([el for el in flagged if el.tag == "main" or el.get("role") == "main"])
    if mains:
        return (mains[0] if len(mains) == 1 else max(mains, key=_text_length)), True
    articles = _outermost([el for el in flagged if el.tag == "article"])
    if len(articles) == 1:
        return articles[0], True
    return body, False


def _walk_text(root, skip: set, skip_tags: frozenset[str], deadline: _Deadline) -> str:
    """Visible text under ``root`` (without the subtrees in ``skip`` or tagged
    ``skip_tags``), in paragraphs.

    One pass over the tree's start/end events collects text pieces and marks;
    whitespace is then collapsed and marks become line breaks by regexes. Element
    texts are only read, never written back (lxml refuses to store control
    characters a page may legally contain).
    """
    pieces: list[str] = []
    append = pieces.append
    pre = 0
    steps = 0
    walk = lxml.etree.iterwalk(root, events=("start", "end"))
    for event, el in walk:
        steps += 1
        if not steps & 0xFFF:
            deadline.check("HTML text")
        tag = el.tag
        action = _ACTION.get(tag)
        if event == "start":
            if tag in skip_tags or el in skip:
                walk.skip_subtree()
                continue
            if action is not None:
                if action == _BR:
                    append(_LINE)
                elif action == _CELL:
                    append(" ")
                else:
                    append(_PARA)
                    pre += action == _PRE
            text = el.text
            if text:
                append(text.replace("\n", _LINE) if pre else text)
        else:
            if action is not None and tag not in skip_tags and el not in skip:
                if action == _CELL:
                    append(" ")
                elif action != _BR:
                    append(_PARA)
                    if action == _PRE:
                        pre = max(0, pre - 1)
            tail = el.tail
            if tail and el is not root:
                append(tail.replace("\n", _LINE) if pre else tail)
    # Collapse whitespace, then turn runs of marks into paragraph or line breaks
    # (all in C: one regex pass each, however many paragraphs there are).
    text = _SPACES.sub(" ", "".join(pieces))
    text = _SPACE_AT_MARK.sub(r"\1", text)
    text = _PARA_RUN.sub("\n\n", text)
    return _LINE_RUN.sub("\n", text).strip()


def _html_text(path: str | os.PathLike[str], source: str, deadline: _Deadline) -> str:
    if _PARA in source or _LINE in source:
        source = source.replace(_PARA, "").replace(_LINE, "")
    doc = _parse_html(path, source)
    deadline.check("HTML parsing")
    if doc is None:
        return ""
    title_el = doc.find("head/title")
    title = " ".join(title_el.xpath("string()").split()) if title_el is not None else ""
    body = doc.find("body")
    if body is None:
        body = doc
    lxml.etree.strip_elements(body, *_HTML_SKIP, with_tail=False)
    flagged = _FLAGGED_XPATH(body)
    hidden = {el for el in flagged if _is_hidden(el)}
    root, narrowed = _main_content(body, flagged)
    hidden.discard(root)
    deadline.check("HTML cleaning")
    if narrowed:
        text = _walk_text(root, hidden, _BOILERPLATE_TAGS, deadline)
        if text:
            return text
        # An empty <main> (a page filled in by script): fall back to the body.
    text = _walk_text(body, hidden, _BODY_BOILERPLATE_TAGS, deadline)
    if title:
        text = f"{title}\n\n{text}" if text else title
    return text


# --------------------------------------------------------------------------- PDF

_PDF_MAGIC = b"%PDF-"


def _pdf_text(path: str | os.PathLike[str], data: bytes, deadline: _Deadline) -> tuple[str, int]:
    # The header may follow a little junk (the spec tolerates it within 1 KiB).
    if _PDF_MAGIC not in data[:1024]:
        raise MismatchedContent(path, "not a PDF (no %PDF- header)")
    try:
        # Lenient parsing recovers what it can; its warnings are not errors of ours.
        # (catch_warnings is process-wide: extract PDFs from one thread at a time.)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = PdfReader(io.BytesIO(data), strict=False)
            deadline.check("PDF opening")
            if reader.is_encrypted:
                _unlock(path, reader)
            steps = 0

            def on_operator(*_args: object) -> None:
                # Called by pypdf for every content-stream operator: the
                # budget is checked inside a page, not only between pages.
                nonlocal steps
                steps += 1
                if not steps & 0x3FF:
                    deadline.check("PDF text")

            texts = []
            for page in reader.pages:
                deadline.check("PDF pages")
                texts.append(page.extract_text(visitor_operand_before=on_operator) or "")
    except FileNotDecryptedError as exc:
        raise EncryptedFile(path, f"encrypted PDF ({exc})") from None
    except LimitReachedError as exc:
        raise TooLarge(path, f"PDF exceeds a parser limit ({exc})") from None
    except NotImplementedError as exc:
        raise CorruptFile(path, f"uses a PDF feature the reader does not support ({exc})") from None
    except (
        PyPdfError,
        ValueError,
        LookupError,
        TypeError,
        AttributeError,
        ArithmeticError,
        zlib.error,
        struct.error,
    ) as exc:
        # pypdf raises plain Python errors too on some malformed structures (a
        # huge startxref offset is an OverflowError; the fuzz tests find these).
        raise CorruptFile(path, f"unreadable PDF ({type(exc).__name__}: {exc})") from None
    except RecursionError:
        raise CorruptFile(path, "unreadable PDF (object structure nested too deeply)") from None
    if not texts:
        raise CorruptFile(path, "PDF has no pages")
    text = _normalize_newlines("\n\n".join(t.strip("\n") for t in texts))
    return text, len(texts)


def _unlock(path: str | os.PathLike[str], reader: PdfReader) -> None:
    """Open a PDF locked with an empty user password; refuse real passwords."""
    try:
        opened = reader.decrypt("")
    except DependencyError:
        raise EncryptedFile(
            path, "encrypted PDF using AES; install 'cryptography' to open it"
        ) from None
    except NotImplementedError as exc:  # a security handler pypdf does not implement
        raise EncryptedFile(path, f"encrypted PDF ({exc})") from None
    if not opened:
        raise EncryptedFile(path, "encrypted PDF (password required)")


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
