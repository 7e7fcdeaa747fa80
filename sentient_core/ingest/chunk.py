"""Overlapping chunks with sentence-aware breaks (SPEC §4 Ingest).

The rule, for a window ``text[start : start + size]``:

* If the rest of the text fits in the window, it is the last chunk.
* Otherwise the chunk ends at the **last** break point whose marker lies in the
  second half of the window, ``text[start + size // 2 : start + size]``. A break
  point is right after ``.``, ``!`` or ``?`` followed by whitespace (the
  whitespace may be the first character past the window), or right after a blank
  line (``\\n``, optional spaces/tabs, ``\\n``; its first newline is the marker and
  its second newline must be inside the window). With no break point there, the
  chunk ends at ``start + size``.
* The next chunk starts at ``max(end - overlap, start + 1)``: consecutive chunks
  share exactly ``overlap`` characters unless the chunk was shorter than
  ``overlap + 1``, in which case the start still advances by one, so chunking
  always terminates.

Chunks are exact slices of the text (``chunk.text == text[chunk.start:chunk.end]``,
offsets in characters). Chunks made only of whitespace are dropped; their
offsets are still consumed, so ``index`` counts the emitted chunks only.

:func:`iter_chunks` applies the same rule to a stream of text pieces, holding at
most about one window plus one piece, and yields exactly what :func:`chunk_text`
returns for the concatenated pieces.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated

import msgspec

from sentient_core.errors import ArgumentError

DEFAULT_SIZE = 2000
DEFAULT_OVERLAP = 200

_SENTENCE_MARKS = ".!?"
_BLANK_LINE_FILL = " \t"


class Chunk(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One chunk of a text.

    Attributes
    ----------
    index : int
        Position among the emitted chunks, from 0.
    start, end : int
        Character offsets into the whole text; ``text == whole[start:end]``.
    text : str
        The chunk's characters.
    """

    index: Annotated[int, msgspec.Meta(ge=0)]
    start: Annotated[int, msgspec.Meta(ge=0)]
    end: Annotated[int, msgspec.Meta(ge=1)]
    text: str


def _check_params(size: int, overlap: int) -> None:
    if size < 1:
        raise ArgumentError(f"chunk size must be >= 1, got {size}")
    if not 0 <= overlap < size:
        raise ArgumentError(f"overlap must be in [0, size), got overlap={overlap}, size={size}")


def _break_end(buf: str, lo: int, limit: int) -> int:
    """End offset in ``buf`` of the chunk whose window ends at ``limit``.

    ``lo`` is where the second half of the window starts. ``buf`` must hold at
    least one character past ``limit`` (the whitespace lookahead). Searches
    backwards with ``str.rfind``, so the usual case costs a few C calls.
    """
    best = -1
    for mark in _SENTENCE_MARKS:
        hi = limit
        while (at := buf.rfind(mark, lo, hi)) >= 0 and at + 1 > best:
            if buf[at + 1].isspace():
                best = at + 1
                break
            hi = at
    # A blank line: its second newline at <= limit - 1, its first at >= lo.
    hi = limit
    while (second := buf.rfind("\n", lo, hi)) >= 0 and second + 1 > best:
        first = second - 1
        while first >= lo and buf[first] in _BLANK_LINE_FILL:
            first -= 1
        if first >= lo and buf[first] == "\n":
            best = second + 1
            break
        hi = second
    return best if best > 0 else limit


def chunk_text(text: str, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP) -> list[Chunk]:
    """Split ``text`` into overlapping chunks.

    Parameters
    ----------
    text : str
        The whole text.
    size : int
        Largest chunk, in characters (default 2000).
    overlap : int
        Characters shared by consecutive chunks (default 200), ``0 <= overlap < size``.

    Returns
    -------
    list of Chunk
        Empty for empty or whitespace-only text.
    """
    return list(iter_chunks((text,), size, overlap))


def iter_chunks(
    pieces: Iterable[str], size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP
) -> Iterator[Chunk]:
    """Chunk a stream of text pieces without holding the whole text.

    Parameters
    ----------
    pieces : Iterable[str]
        Consecutive pieces of one text (any sizes, e.g. from ``iter_text``).
    size, overlap : int
        As for :func:`chunk_text`.

    Yields
    ------
    Chunk
        The same chunks, offsets included, as ``chunk_text("".join(pieces))``.
    """
    _check_params(size, overlap)
    half = size // 2
    buf = ""  # text[offset : offset + len(buf)]
    offset = 0
    start = 0  # absolute start of the next chunk
    index = 0
    source = iter(pieces)
    exhausted = False
    while True:
        # A window can be cut only with one character of lookahead past it.
        while not exhausted and offset + len(buf) < start + size + 1:
            try:
                piece = next(source)
            except StopIteration:
                exhausted = True
                break
            if piece:
                buf = buf[start - offset :] + piece
                offset = start
        total = offset + len(buf)
        if start >= total:
            return
        rel = start - offset
        if start + size >= total:
            # Only reachable once the source is exhausted: the rest is the last chunk.
            body = buf[rel:]
            if not body.isspace():
                yield Chunk(index=index, start=start, end=total, text=body)
            return
        rel_end = _break_end(buf, rel + half, rel + size)
        body = buf[rel:rel_end]
        end = offset + rel_end
        if not body.isspace():
            yield Chunk(index=index, start=start, end=end, text=body)
            index += 1
        start = max(end - overlap, start + 1)


__all__ = ["DEFAULT_OVERLAP", "DEFAULT_SIZE", "Chunk", "chunk_text", "iter_chunks"]
