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

Decoding policy
---------------
A byte-order mark selects UTF-8/16/32; otherwise UTF-8 (HTML may name another
charset in a ``<meta>`` tag). Undecodable bytes become U+FFFD only when the file
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
import warnings
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Annotated, Literal

import msgspec
from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError, PyPdfError

from sentient_core.errors import ArgumentError
from sentient_core.ingest.errors import (
    CorruptFile,
    EmptyFile,
    EncryptedFile,
    MismatchedContent,
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
    path: str | os.PathLike[str], *, max_bytes: int = MAX_WHOLE_FILE_BYTES
) -> ExtractedDoc:
    """Extract the text of one file, loading it whole.

    Parameters
    ----------
    path : str or os.PathLike
        A .txt, .md, .json, .html, .htm or .pdf file.
    max_bytes : int
        Refuse files larger than this (default 64 MiB).

    Returns
    -------
    ExtractedDoc

    Raises
    ------
    IngestError
        A subclass naming the file and the reason (see :mod:`.errors`).
    """
    kind = kind_of(path)
    data = _read_whole(path, max_bytes)
    text, pages = _extract(path, kind, data)
    return ExtractedDoc(path=os.fspath(path), kind=kind, text=text, pages=pages, bytes=len(data))


def extract_bytes(path: str | os.PathLike[str], data: bytes) -> str:
    """Text of content already read, by the same rules as :func:`extract_text`.

    For callers that must extract exactly the bytes they checked (the
    chaperone's fetcher) instead of opening ``path`` again. The format comes
    from ``path``'s extension; ``path`` also names the file in errors.

    Raises
    ------
    IngestError
        A subclass naming the file and the reason (see :mod:`.errors`).
    """
    kind = kind_of(path)
    if not data:
        raise EmptyFile(path, "empty file (0 bytes)")
    return _extract(path, kind, data)[0]


def _extract(path: str | os.PathLike[str], kind: str, data: bytes) -> tuple[str, int]:
    """(text, pages) of ``data`` in format ``kind``; raises EmptyFile when no text."""
    pages = 1
    if kind in STREAMED_KINDS:
        text = _decode_text(path, data)
    elif kind == "json":
        text = _json_text(path, _decode_text(path, data))
    elif kind == "html":
        text = _html_text(_decode_text(path, data, fallback=_html_charset(data)))
    else:
        text, pages = _pdf_text(path, data)
    if not text.strip():
        raise EmptyFile(path, _no_text_reason(kind, pages))
    return text, pages


def iter_text(
    path: str | os.PathLike[str],
    *,
    block_chars: int = DEFAULT_BLOCK_CHARS,
    max_bytes: int | None = None,
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
        text = extract_text(path, max_bytes=cap).text
        return (text[i : i + block_chars] for i in range(0, len(text), block_chars))
    size = _regular_file_size(path)
    if max_bytes is not None and size > max_bytes:
        raise TooLarge(path, f"{size} bytes exceeds the cap of {max_bytes} bytes")
    if size == 0:
        raise EmptyFile(path, "empty file (0 bytes)")
    encoding = _file_bom_encoding(path) or "utf-8"
    _check_text_stream(path, encoding, block_chars)
    return _stream_text(path, encoding, block_chars)


# --------------------------------------------------------------------------- reading


def _regular_file_size(path: str | os.PathLike[str]) -> int:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UnreadableFile(path, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UnreadableFile(path, "is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        # A FIFO or device would block or never end.
        raise UnreadableFile(path, "not a regular file")
    return st.st_size


def _read_whole(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    size = _regular_file_size(path)
    if size > max_bytes:
        raise TooLarge(
            path, f"{size} bytes exceeds the cap of {max_bytes} bytes for whole-file formats"
        )
    try:
        with open(path, "rb") as f:
            # Read one byte past the cap in case the file grew since stat().
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


def _file_bom_encoding(path: str | os.PathLike[str]) -> str | None:
    try:
        with open(path, "rb") as f:
            return _bom_encoding(f.read(4))
    except OSError as exc:
        raise UnreadableFile(path, f"cannot read: {exc.strerror or exc}") from None


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
    try:
        # newline=None: universal newlines, the same normalisation as _normalize_newlines.
        return open(path, encoding=encoding, errors="replace", newline=None)
    except OSError as exc:
        raise UnreadableFile(path, f"cannot read: {exc.strerror or exc}") from None


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


def _json_text(path: str | os.PathLike[str], source: str) -> str:
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
    return "\n".join(_json_lines(value))


def _json_lines(value: object) -> Iterator[str]:
    """Yield the strings of a JSON value depth-first in order; a key and its
    string value share a line ``key: value``."""
    stack: list[object] = [value]
    while stack:
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

_HTML_SKIP = frozenset(
    {"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "canvas"}
)
_HTML_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1",
        "h2", "h3", "h4", "h5", "h6", "head", "header", "hr", "html", "li", "main",
        "nav", "ol", "p", "pre", "section", "summary", "table", "title", "tr", "ul",
    }
)  # fmt: skip
_HTML_CELL = frozenset({"td", "th"})
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)


def _html_charset(data: bytes) -> str | None:
    match = _META_CHARSET.search(data[:4096])
    if not match:
        return None
    name = match.group(1).decode("ascii")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


class _HtmlText(HTMLParser):
    """Collects visible text: paragraphs per block element, lines per <br>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self._lines: list[str] = []
        self._pieces: list[str] = []
        self._skip = 0
        self._pre = 0

    def _end_line(self) -> None:
        line = " ".join("".join(self._pieces).split())
        self._pieces.clear()
        if line:
            self._lines.append(line)

    def _end_paragraph(self) -> None:
        self._end_line()
        if self._lines:
            self.paragraphs.append("\n".join(self._lines))
            self._lines.clear()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HTML_SKIP:
            self._skip += 1
        elif tag in _HTML_BLOCK:
            self._end_paragraph()
            self._pre += tag == "pre"
        elif tag == "br":
            self._end_line()
        elif tag in _HTML_CELL:
            self._pieces.append(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <hr/>: no content, so no skip depth to track.
        if tag in _HTML_BLOCK:
            self._end_paragraph()
        elif tag == "br":
            self._end_line()

    def handle_endtag(self, tag: str) -> None:
        if tag in _HTML_SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in _HTML_BLOCK:
            self._end_paragraph()
            if tag == "pre":
                self._pre = max(0, self._pre - 1)
        elif tag in _HTML_CELL:
            self._pieces.append(" ")

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if not self._pre:
            self._pieces.append(data)
            return
        first, *rest = data.split("\n")
        self._pieces.append(first)
        for line in rest:
            self._end_line()
            self._pieces.append(line)

    def text(self) -> str:
        self._end_paragraph()
        return "\n\n".join(self.paragraphs)


def _html_text(source: str) -> str:
    parser = _HtmlText()
    parser.feed(source)
    parser.close()
    return parser.text()


# --------------------------------------------------------------------------- PDF

_PDF_MAGIC = b"%PDF-"


def _pdf_text(path: str | os.PathLike[str], data: bytes) -> tuple[str, int]:
    # The header may follow a little junk (the spec tolerates it within 1 KiB).
    if _PDF_MAGIC not in data[:1024]:
        raise MismatchedContent(path, "not a PDF (no %PDF- header)")
    try:
        # Lenient parsing recovers what it can; its warnings are not errors of ours.
        # (catch_warnings is process-wide: extract PDFs from one thread at a time.)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted:
                _unlock(path, reader)
            texts = [page.extract_text() or "" for page in reader.pages]
    except FileNotDecryptedError as exc:
        raise EncryptedFile(path, f"encrypted PDF ({exc})") from None
    except LimitReachedError as exc:
        raise TooLarge(path, f"PDF exceeds a parser limit ({exc})") from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        # pypdf raises plain Python errors too on some malformed structures.
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
    "KIND_BY_EXTENSION",
    "MAX_REPLACED_FRACTION",
    "MAX_WHOLE_FILE_BYTES",
    "REPLACED_ALLOWANCE",
    "STREAMED_KINDS",
    "SUPPORTED",
    "ExtractedDoc",
    "Kind",
    "extract_text",
    "iter_text",
    "kind_of",
]
