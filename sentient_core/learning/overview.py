"""Answers to an overview question ("What is known about X?"): which passages say what X is.

:func:`overview` narrows the offline answerer's ranked candidates for a subject:
passages that define it (a bare word nothing defines gets none), a changelog
entry from its own line on, and the documents named for the subject first.
"""

from __future__ import annotations

from typing import NamedTuple

from sentient_core.learning.corpus_index import PassageIndex
from sentient_core.learning.subjects import defines

__all__ = ["Overview", "overview"]


class Overview(NamedTuple):
    """The narrowed candidates, the answer's ranking margin (None: nothing competes),
    where each passage's answer starts (``trim``), the named documents' openings, and
    the passages whose answer runs on through the next one (``joins``)."""

    candidates: list[tuple[int, float]]
    margin: float | None
    trim: dict[int, int]
    openings: list[int]
    joins: dict[int, int]


def overview(
    index: PassageIndex,
    subject: str,
    candidates: list[tuple[int, float]],
    keys: list[float],
    k: int,
    min_score: float,
    openings: list[int],
) -> Overview:
    """Narrow ``candidates`` (passage, score; ranking ``keys`` aligned, best first) for
    an overview of ``subject``; ``openings``: the first passage of each document named
    for it (:meth:`CorpusAnswerer._named`)."""
    trim: dict[int, int] = {}  # passage -> where its answer starts
    joins: dict[int, int] = {}  # passage -> the next passage its answer runs through
    if not any(c.isdigit() for c in subject):
        # "What is known about X?" asks what X is: a passage that defines it (X
        # starts its document's name or its title) answers it, not one that merely
        # mentions it ("certificate" -> a list of SSL constants); a bare word with
        # no defining passage gets no answer.
        defining = [
            n
            for n, (i, _) in enumerate(candidates)
            if defines(subject, index.sources[i], index.headings[i], index.passages[i])
        ]
        if defining or " " not in subject:
            candidates = [candidates[n] for n in defining]
            keys = [keys[n] for n in defining]
    else:
        # A heading with a version (a changelog entry: "git 1:2.39.5-0+deb12u2"):
        # the passages that hold the entry's own line, not one that only starts
        # under its heading with the entry's last line (its signature).
        # The version follows the package, whose name may hold digits (gnutls28).
        version = [w for w in subject.split() if any(c.isdigit() for c in w)][-1]
        holding = [n for n, (i, _) in enumerate(candidates) if version in index.passages[i]]
        if not holding:
            # Ranked low (its passage opens with the entry above): found by its line.
            line = f"({version})"
            extra = [i for i, text in enumerate(index.passages) if line in text][:k]
            candidates += [(i, min_score) for i in extra]
            keys += [min_score] * len(extra)
            holding = list(range(len(candidates) - len(extra), len(candidates)))
        if holding:
            candidates = [candidates[n] for n in holding]
            keys = [keys[n] for n in holding]
            # A passage split across entries starts at the entry's own line (the
            # lines before it belong to the entry above).
            # An entry whose line ends a passage goes on in the next one: joined.
            for i, _ in candidates:
                at = _line_start(index.passages[i], version)
                if at > 0:
                    trim[i] = at
                rest = index.passages[i][max(at, 0) :].strip()
                nxt = i + 1
                if (
                    "\n" not in rest
                    and nxt < len(index.passages)
                    and index.sources[nxt] == index.sources[i]
                ):
                    joins[i] = nxt
    margin = keys[0] - (keys[k] if len(keys) > k else 0.0) if keys else None
    if openings:
        # An overview of a subject documents are named for (a user's curl.changelog.txt
        # for curl, a shipped module for its name): their openings first, then their
        # best-ranked passages; one answer, even when many of their passages rank
        # alike or none mentions the name ("asyncore"'s docs never say "asyncore").
        # A passage of another document that mentions the subject is no competing
        # answer (curl's changelog often mentions openssl; openssl's is its overview).
        named = {index.sources[i] for i in openings}
        best = [(n, c) for n, c in enumerate(candidates) if index.sources[c[0]] in named]
        score = best[0][1][1] if best else min_score
        chosen = [(i, score) for i in openings[:k]]
        chosen += [c for _, c in best if all(c[0] != i for i, _ in chosen)]
        # No ranked passage of theirs: nothing competes (a margin of None).
        margin = keys[best[0][0]] if best else None
        candidates = chosen
    return Overview(candidates, margin, trim, openings, joins)


def _line_start(text: str, version: str) -> int:
    """Where the line of entry ``version`` starts in ``text``: the line that gives it
    in parentheses (a changelog entry's own line), else the first that holds it; -1
    when none does."""
    at = text.find(f"({version})")
    if at < 0:
        at = text.find(version)
    return -1 if at < 0 else text.rfind("\n", 0, at) + 1
