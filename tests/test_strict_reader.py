"""The strict reader's objections, checked by machine (issue 22 item 7): questions
lifted from their own answer, bare words an arbitrary mention answered, answers that
say nothing beyond the question — on real passages of Python's docs and a changelog."""

from __future__ import annotations

import pydoc_data.topics as pydoc_topics
from pathlib import Path

import pytest

from sentient_core.evaluation.strict import objections

CHANGELOG = Path(__file__).resolve().parent.parent / "bench/data/debian/corpus/curl.changelog.txt"
BITWISE = pydoc_topics.topics["bitwise"]
ASSERT = pydoc_topics.topics["assert"]


def _q(subject: str) -> str:
    return f"What is known about {subject}?"


@pytest.mark.parametrize(
    ("subject", "source", "passage", "want"),
    [
        # Named or titled: accepted.
        ("binary bitwise operations", "corpus:pydoc:topic:bitwise", BITWISE, ()),
        ("assert statement", "corpus:pydoc:topic:assert", ASSERT, ()),
        ("asyncore", "corpus:pydoc:module:asyncore", "asyncore\n" + BITWISE, ()),
        # A phrase of the answer that names neither its document nor its title.
        ("three bitwise operations", "corpus:pydoc:topic:bitwise", BITWISE, ("lifted",)),
        # One word the answering document is neither named nor titled for.
        ("operand", "corpus:pydoc:topic:bitwise", BITWISE, ("bare word",)),
        # Nothing beyond the question's words.
        ("curl", "local:/c/curl.changelog.txt", "curl (7.88.1-10) bookworm", ("thin",)),
    ],
)
def test_objections(subject, source, passage, want):
    assert objections(_q(subject), source, passage) == want


def test_a_changelog_entry_with_its_body_is_accepted():
    text = CHANGELOG.read_text()
    entry = text[: text.index("\n -- ")]
    version = entry.split("(", 1)[1].split(")", 1)[0]
    assert objections(_q(f"curl {version}"), f"local:{CHANGELOG}", entry) == ()
    # A user's own question is taken as asked.
    assert objections("Which version fixed CVE-2025-0167?", "local:/x", "x") == ()
