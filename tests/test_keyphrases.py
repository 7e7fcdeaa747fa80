"""Questions are built from salient key phrases, never from raw first lines or
stop-word-like keywords (the malformed questions the loop used to ask)."""

from __future__ import annotations

import pydoc_data.topics as pydoc_topics

import pytest

from sentient_core.ingest.keywords import STOP_WORDS
from sentient_core.keyphrases import GENERIC_WORDS, key_phrases, question_about
from sentient_core.learning.splitting import with_heading
from sentient_core.relevance import (
    ANSWER_TYPES,
    TermStats,
    asked_kinds,
    content_terms,
    relevance,
    stem,
)

CHANGELOG = """jq (1.6-2.1) unstable; urgency=medium

  * Fix CVE-2023-50246: buffer overflow in decNumber when parsing
    large numbers with many digits.
  * Non-maintainer upload.

 -- Laszlo Boszormenyi (GCS) <gcs@debian.org>  Mon, 24 May 2021 10:14:11 +0200
"""

STATS = TermStats(pydoc_topics.topics.values())


def test_signature_lines_dates_and_mail_never_become_phrases():
    phrases = key_phrases(CHANGELOG)
    joined = " ".join(phrases)
    for bad in ("laszlo", "boszormenyi", "gcs", "debian.org", "2021", "10:14", "+0200", "mon"):
        assert bad not in joined, (bad, phrases)
    assert "buffer overflow" in phrases


@pytest.mark.parametrize("topic", sorted(pydoc_topics.topics)[:60])
def test_phrases_are_content_words_and_questions_are_well_formed(topic):
    phrases = key_phrases(pydoc_topics.topics[topic], STATS)
    for phrase in phrases:
        words = phrase.split()
        assert 1 <= len(words) <= 3
        assert not set(words) & GENERIC_WORDS  # never "What is required?" / "What is deep?"
        assert all(w.isalpha() and len(w) >= 3 for w in words)
        q = question_about(phrase)
        assert q.startswith("What is known about ") and q.endswith("?")
        assert "\n" not in q and len(q) < 100


def test_the_malformed_examples_cannot_be_produced():
    for text in ("It is required.", "This goes deep.", "Deep and required things."):
        assert key_phrases(text) == []
    assert key_phrases(CHANGELOG)[0] != "laszlo boszormenyi"


def test_a_heading_run_into_its_first_line_repeats_no_word():
    # Seen in `make run`: "What is known about debugger commands commands?" from the
    # heading "Debugger Commands" over the line "commands [bpnumber]".
    text = "Debugger Commands\ncommands [bpnumber]\n\nDebugger commands: debugger commands."
    phrases = key_phrases(text)
    assert "debugger commands" in phrases
    for phrase in phrases:
        stems = [stem(w) for w in phrase.split()]
        assert len(set(stems)) == len(stems), phrase


def test_indefinite_pronouns_are_never_part_of_a_phrase():
    # Seen in `make run`: "What is known about commands print anything?"
    text = "If none of the other commands print anything, you see no sign. Something happened."
    for phrase in key_phrases(text):
        assert not {"anything", "something", "nothing"} & set(phrase.split()), phrase


def test_prepositions_never_end_or_start_a_phrase():
    # Free-run questions: "What is known about implied relationships among?",
    # "... besides keywords?", "... forked child depending?", "... block textually preceding?"
    text = (
        "There are no other implied relationships among the comparison operators.\n"
        "Certain classes of identifiers (besides keywords) have special meanings.\n"
        "Finish processing in a forked child depending on the request data.\n"
        "Names in the block textually preceding the global statement."
    )
    phrases = key_phrases(text)
    assert "implied relationships" in phrases and "forked child" in phrases
    for phrase in phrases:
        assert not set(phrase.split()) & {"among", "besides", "depending", "preceding"}, phrase
    assert not {"among", "besides", "depending"} & STOP_WORDS  # why the list is needed


def test_a_heading_line_never_runs_into_the_passage_under_it():
    # Free-run questions: "How does basic customization virtual fit with what I already
    # know?", "... string methods str ..." (a stored passage under its section heading).
    for heading, passage in (
        ("Basic customization", "Virtual subclassing is not considered here."),
        ("String Methods", "str casefold returns a casefolded copy of the string."),
    ):
        phrases = key_phrases(with_heading(heading, passage))
        assert heading.lower() in phrases, phrases
        assert not any(p.startswith(heading.lower() + " ") for p in phrases), phrases


def test_adverbs_are_never_part_of_a_phrase():
    # Free-run questions: "How does essentially render fit ...?", "What is known about
    # automatically generate ordering?"
    text = (
        "The format essentially renders the value. Tools automatically generate ordering"
        " methods. The assembly language and the rally results."
    )
    words = {w for p in key_phrases(text) for w in p.split()}
    assert not {"essentially", "automatically"} & words
    assert {"assembly", "rally"} <= words  # nouns with adverb-like endings stay


def test_listings_and_table_rows_give_no_phrase():
    # Free-run questions: "What is known about root wheel?" (an FTP listing in ftplib's
    # docstring), "... seq?" (itertools' table of functions).
    listing = (
        "drwxr-xr-x   2 root  wheel  1024 Jan  3  1994 bin\n"
        "drwxr-xr-x   2 root  wheel  1024 Jan  3  1994 etc\n"
        "dropwhile(pred, seq) --> seq[n], seq[n+1], starting when pred fails\n"
        "takewhile(pred, seq) --> seq[0], seq[1], until pred fails\n"
    )
    assert key_phrases(listing) == []
    # Prose quoting code keeps its phrases.
    prose = 'The simple form, "assert expression", is equivalent to a conditional raise.'
    assert "conditional raise" in key_phrases(listing + prose)


def test_a_recurring_multi_word_term_beats_its_words():
    assert key_phrases(pydoc_topics.topics["with"], STATS)[0] == "context managers"


def test_relevance_is_the_idf_weighted_share_of_question_terms():
    stats = TermStats(["the curl package", "the curl tool", "a rare quokka"])
    assert relevance("Which quokka?", "a quokka here, the quokka there", stats) == 1.0
    # One word mentioned once, or only inside a URL, is not a passage about it.
    assert relevance("Which quokka?", "a quokka here", stats) == 0.5
    assert relevance("Which quokka?", "see https://quokka.org/quokka", stats) == 0.0
    assert relevance("What is a curl quokka?", "curl only", stats) < 0.5  # the rare term is missing
    assert relevance("What is a curl quokka?", "quokka only", stats) > 0.5
    assert relevance("What is it?", "anything", stats) == 0.0  # no content terms
    assert stem("raises") == stem("raise") == stem("raised") and stem("loops") == "loop"
    assert content_terms("Which exception does it raise?") == [stem("exception"), stem("raise")]


def test_a_named_identifier_counts_whole_or_zeroes_the_score():
    stats = TermStats(["curl 7.88.1-10+deb12u12 entry", "the curl tool", "uploaded date"])
    q = "On which date was version 7.88.1-10+deb12u12 of curl uploaded?"
    held = "curl (7.88.1-10+deb12u12) bookworm\n -- Samuel  Sun, 09 Mar 2025"
    naive_terms = set(content_terms(q))
    parts = set(content_terms("7.88.1-10+deb12u12"))
    w = stats.idf
    # By hand: the identifier's parts count once as terms and once more as the whole;
    # "date", the kind of answer asked for, is there because a date is ("09 Mar 2025").
    found = {t for t in naive_terms if t in set(content_terms(held))} | {stem("date")}
    expected = (sum(w(t) for t in found) + sum(w(t) for t in parts)) / (
        sum(w(t) for t in naive_terms) + sum(w(t) for t in parts)
    )
    assert relevance(q, held, stats) == pytest.approx(expected)
    # Without the identifier whole the words alone score nothing.
    assert relevance(q, "curl 7.88.1 uploaded on that date, deb12u12", stats) == 0.0
    # Found whole, it lifts a passage that lacks the question's other words.
    assert relevance(q, held, stats) > relevance(q.replace("7.88.1-10+deb12u12", "x"), held, stats)


@pytest.mark.parametrize(
    ("kind", "value", "not_value"),
    [
        ("date", "Sun, 09 Mar 2025 10:14:11 +0100", "on Sunday in the spring"),
        ("date", "released 2024-06-30", "released 2024-6"),
        ("date", "May 4, 2023", "may be 4"),
        ("version", "curl (7.88.1-10+deb12u5)", "curl release ten"),
        ("version", "vim (2:9.0.1378-2)", "vim two"),
        ("year", "in 1997", "in 97"),
        ("number", "of 42 bytes", "of many bytes"),
    ],
)
def test_the_kind_of_answer_asked_for_is_found_as_a_value_of_that_kind(kind, value, not_value):
    assert ANSWER_TYPES[kind].search(value) and not ANSWER_TYPES[kind].search(not_value)
    q = f"On which {kind} did the quokka arrive?"
    assert asked_kinds(q) == {kind}
    stats = TermStats(["quokka arrive", "a quokka", "other text", "more text"])
    with_value = relevance(q, f"The quokka arrived {value}.", stats)
    without = relevance(q, f"The quokka arrived {not_value}.", stats)
    w = stats.idf
    terms = set(content_terms(q))
    assert terms == {stem(kind), "quokka", stem("arrive")}
    # By hand: quokka and arrive are there; the kind's noun counts only with a value of it.
    assert with_value == pytest.approx(1.0)
    assert without == pytest.approx((w("quokka") + w(stem("arrive"))) / sum(w(t) for t in terms))
    assert without < with_value


def test_a_question_names_an_answer_kind_only_after_which_or_what():
    assert asked_kinds("Which version of curl fixed it?") == {"version"}
    assert asked_kinds("What date is it?") == {"date"}
    assert asked_kinds("When did the version change?") == set()  # "version" is the subject here
    assert asked_kinds("Which method implements len()?") == set()  # no value pattern for names


LEAKED = {
    # The free-run questions issue 22 lists, each from the shipped passage it came from.
    "exactly": "bltin-ellipsis-object",
    "class foo": "class",
}
LEAKED_MODULES = {
    "directory contents total": "ftplib",
    "nice test": "ftplib",
    "ehlo mail rcpt": "smtplib",
}


def test_the_leaked_phrases_of_the_free_run_are_not_produced_again():
    from sentient_core.learning.offline import CorpusAnswerer

    answerer = CorpusAnswerer([], include_python_docs=True)
    stats = answerer.term_stats()
    wanted = {f"pydoc:topic:{t}": p for p, t in LEAKED.items()}
    wanted |= {f"pydoc:module:{m}": p for p, m in LEAKED_MODULES.items()}
    seen: dict[str, list[str]] = {}
    for text, source in zip(answerer.passages, answerer.sources, strict=True):
        if source.ref in wanted:
            seen.setdefault(source.ref, []).extend(key_phrases(text, stats, k=5))
    assert set(seen) == set(wanted)  # every passage is still there to be read
    for ref, phrases in seen.items():
        assert wanted[ref] not in phrases, (ref, phrases)
        for other in (*LEAKED, *LEAKED_MODULES):
            assert other not in phrases
    # "commands args": a placeholder is not a subject.
    assert key_phrases("Run the commands args and kwargs as given.") == ["commands"]
