"""Question/answer sets: loading, validation and answer matching.

A Q/A file is a JSON list of entries::

    [{"q": "Which statement raises an exception?", "answers": ["raise"]}, ...]

``q`` is a non-empty question; ``answers`` a non-empty list of non-empty
strings, any one of which counts as the answer. An entry may also name the
corpus file it is about (``"source": "raise.txt"``, optional; the set builders
use it to verify every answer by machine). Any other key is an error, and so is
the same question twice. Errors name the file and the entry (its index and, when
it has one, its question).

Matching (:func:`contains_answer`) is case-insensitive substring search after
whitespace normalisation (:func:`normalize`): every run of whitespace becomes
one space, so an answer that a chunker or a line break cut differently still
matches.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec

from sentient_core.errors import ArgumentError

__all__ = [
    "QAFileError",
    "QAItem",
    "contains_answer",
    "first_answer",
    "load_qa",
    "normalize",
    "parse_qa",
    "sample",
]

_WS = re.compile(r"\s+")


class QAFileError(ArgumentError):
    """A Q/A file cannot be read or an entry of it is invalid (the message names it)."""


class QAItem(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One question and the strings that count as its answer.

    Attributes
    ----------
    q : str
        The question, as a user would ask it.
    answers : tuple of str
        Any of these, found (case-insensitively, whitespace-normalised) in a
        passage, means the passage answers the question.
    source : str
        Optional: the corpus file (relative to the corpus dir) the question is about.
    """

    q: str
    answers: tuple[str, ...]
    source: str = ""


def normalize(text: str) -> str:
    """Lower-case ``text`` and collapse every run of whitespace to one space (stripped)."""
    return _WS.sub(" ", text).strip().lower()


def first_answer(text: str, answers: Iterable[str]) -> str | None:
    """The first of ``answers`` found in ``text`` (see the module docstring), or None."""
    hay = normalize(text)
    for a in answers:
        needle = normalize(a)
        if needle and needle in hay:
            return a
    return None


def contains_answer(text: str, answers: Iterable[str]) -> bool:
    """Whether one of ``answers`` occurs in ``text`` (case-insensitive, whitespace-normalised)."""
    return first_answer(text, answers) is not None


_RAW = msgspec.json.Decoder(list[object])


def _describe(i: int, entry: object) -> str:
    if isinstance(entry, dict) and isinstance(entry.get("q"), str) and entry["q"].strip():
        q = " ".join(entry["q"].split())
        return f"entry {i} ({q[:60]!r})"
    return f"entry {i}"


def parse_qa(data: bytes | str, *, name: str = "<qa>") -> list[QAItem]:
    """Parse and validate the JSON text of a Q/A file.

    Parameters
    ----------
    data : bytes or str
        The file's content.
    name : str
        What to call the file in error messages.

    Returns
    -------
    list of QAItem
        In file order, questions and answers stripped.

    Raises
    ------
    QAFileError
        Not JSON, not a list, an empty list, or an invalid entry (named).
    """
    try:
        entries = _RAW.decode(data)
    except msgspec.ValidationError:
        raise QAFileError(
            f"{name}: expected a JSON list of {{'q': ..., 'answers': [...]}} entries"
        ) from None
    except msgspec.DecodeError as err:
        raise QAFileError(f"{name}: not valid JSON ({err})") from None
    if not entries:
        raise QAFileError(f"{name}: the list of questions is empty")
    items: list[QAItem] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        where = f"{name}: {_describe(i, entry)}"
        if not isinstance(entry, dict):
            raise QAFileError(f"{where}: expected an object with 'q' and 'answers'")
        try:
            item = msgspec.convert(entry, QAItem)
        except msgspec.ValidationError as err:
            raise QAFileError(f"{where}: {err}") from None
        q = " ".join(item.q.split())
        if not q:
            raise QAFileError(f"{where}: 'q' is empty")
        if not item.answers:
            raise QAFileError(f"{where}: 'answers' is empty (give at least one answer string)")
        answers = tuple(a.strip() for a in item.answers)
        for j, a in enumerate(answers):
            if not normalize(a):
                raise QAFileError(f"{where}: answers[{j}] is empty")
        key = normalize(q)
        if key in seen:
            raise QAFileError(f"{where}: the same question as entry {seen[key]}")
        seen[key] = i
        items.append(QAItem(q=q, answers=answers, source=item.source.strip()))
    return items


def load_qa(path: str | os.PathLike[str]) -> list[QAItem]:
    """Read and validate a Q/A file (see :func:`parse_qa`).

    Raises
    ------
    QAFileError
        The file cannot be read, or is invalid (the message names the entry).
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise QAFileError(f"{p}: cannot read the Q/A file ({err.strerror or err})") from None
    return parse_qa(data, name=str(p))


def sample(items: Sequence[QAItem], n: int | None, seed: int = 0) -> list[QAItem]:
    """A fixed, seeded sample of ``n`` items in file order (all of them when ``n`` is None)."""
    if n is None or n >= len(items):
        return list(items)
    if n < 1:
        raise ArgumentError(f"sample size must be >= 1, got {n}")
    import random

    keep = sorted(random.Random(seed).sample(range(len(items)), n))
    return [items[i] for i in keep]
