"""Text of a JSON document: its strings depth-first, a key and its string value on one line.

JSON that does not even begin like a JSON value is ``MismatchedContent``; JSON
that begins like one but fails to parse (truncated, malformed) is ``CorruptFile``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator

from sentient_core.ingest.deadline import Deadline
from sentient_core.ingest.errors import CorruptFile, MismatchedContent

__all__ = ["json_text"]


class _JsonObject(list):
    """Key/value pairs of one JSON object, in file order (duplicates kept)."""

    __slots__ = ()


# A file that opens a JSON container but fails to parse is broken JSON; anything
# else that fails is not JSON at all.
_JSON_CONTAINER_START = re.compile(r"\s*[\[{]")


def json_text(path: str | os.PathLike[str], source: str, deadline: Deadline) -> str:
    """The strings of the JSON document ``source``, one per line, in document order."""
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


def _json_lines(value: object, deadline: Deadline) -> Iterator[str]:
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
