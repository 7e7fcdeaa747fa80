"""Reading files for extraction: regular files only, size caps, and text decoding.

Decoding (see the decoding policy of :mod:`.extract`): a byte-order mark
selects UTF-8/16/32, otherwise UTF-8; undecodable bytes become U+FFFD only
while the file is mostly valid text; line ends become ``\\n``.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
from collections.abc import Iterator

from sentient_core.ingest.errors import EmptyFile, MismatchedContent, TooLarge, UnreadableFile

__all__ = [
    "MAX_REPLACED_FRACTION",
    "MAX_WHOLE_FILE_BYTES",
    "REPLACED_ALLOWANCE",
    "bom_encoding",
    "check_text_stream",
    "decode_text",
    "normalize_newlines",
    "open_regular",
    "read_bytes",
    "stream_text",
]

MAX_WHOLE_FILE_BYTES = 64 * 1024 * 1024
"""Cap for formats parsed whole (JSON, HTML, PDF, and plain text via ``extract_text``)."""

MAX_REPLACED_FRACTION = 0.05
"""Above this fraction of undecodable characters a file counts as binary..."""

REPLACED_ALLOWANCE = 4
"""...unless it has at most this many (a stray byte in a short note is not binary)."""


def open_regular(path: str | os.PathLike[str]) -> io.BufferedReader:
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
    with open_regular(path) as f:
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


_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 LE starts with the UTF-16 LE mark, so it is tested first.
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def bom_encoding(head: bytes) -> str | None:
    """The codec a byte-order mark at the start of ``head`` selects, or ``None``."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    return None


def normalize_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` as ``\\n``."""
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


def decode_text(path: str | os.PathLike[str], data: bytes, fallback: str | None = None) -> str:
    """Text of ``data`` (BOM, else ``fallback``, else UTF-8); refuses binary or empty text."""
    encoding = bom_encoding(data) or fallback or "utf-8"
    text = normalize_newlines(data.decode(encoding, errors="replace"))
    check = _TextCheck()
    check.feed(text)
    check.raise_if_bad(path)
    return text


def _open_text(path: str | os.PathLike[str], encoding: str) -> io.TextIOWrapper:
    # newline=None: universal newlines, the same normalisation as normalize_newlines.
    return io.TextIOWrapper(open_regular(path), encoding=encoding, errors="replace", newline=None)


def check_text_stream(path: str | os.PathLike[str], encoding: str, block_chars: int) -> None:
    """Decode the whole file once, streaming, and refuse it as :func:`decode_text` would."""
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


def stream_text(path: str | os.PathLike[str], encoding: str, block_chars: int) -> Iterator[str]:
    """The file's text in pieces of at most ``block_chars`` (checked first by the caller)."""
    with _open_text(path, encoding) as f:
        while piece := f.read(block_chars):
            yield piece
