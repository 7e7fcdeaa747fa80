"""File names as safe text: for storing in records and showing in messages.

On POSIX a file name is any bytes. Python hands names that are not valid UTF-8
to us as ``str`` with *surrogate escapes* (``b"bad\\xff.txt"`` becomes
``"bad\\udcff.txt"``); such a string cannot be encoded to UTF-8, so writing it
into a record, a JSON line or a terminal raises ``UnicodeEncodeError``.
:func:`safe_path_text` is the one conversion every place that turns a path
into stored or shown text goes through.
"""

from __future__ import annotations

import os

__all__ = ["safe_path_text"]


def _escape(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a surrogate escape: the original byte
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def safe_path_text(path: str | bytes | os.PathLike) -> str:
    """Return ``path`` as printable text that always encodes to UTF-8.

    Names that are valid UTF-8 and printable come back unchanged. Otherwise
    each undecodable byte becomes ``\\xNN`` (``b"bad\\xff.txt"`` →
    ``bad\\xff.txt``, the way Python shows the bytes) and each non-printable
    character (control characters such as a newline or ESC, bidi overrides,
    lone surrogates) becomes a Python-style escape (``\\x1b``, ``\\u202e``), so
    a name can neither break an encoder nor rewrite a terminal line.

    The form is for display and storage: it reads back to the original name
    by eye (and by ``ast.literal_eval`` of a quoted string for the escaped
    characters), but it does not escape backslashes already in a name, so a
    name that itself contains the text ``\\xff`` shows the same as one with
    the byte 0xFF.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        A path as given by ``os`` functions (surrogate-escaped ``str``) or raw bytes.

    Returns
    -------
    str
    """
    raw = os.fspath(path)
    text = os.fsdecode(raw) if isinstance(raw, bytes) else raw
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)
