"""The user's sources first (issue 22 item 1): a folder's files are subjects curiosity
asks about (by their names and their section headings), "What is known about <a file's
subject>?" gets an overview of that file, and a free run over a user corpus with
Python's docs on spends most of its queries, and finds most of its successes, there."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from sentient_core.evaluation.free import run_free
from sentient_core.learning.chaperone import CorpusTopic
from sentient_core.learning.curiosity import Curiosity, CuriosityConfig
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.subjects import heading_subject, overview_subject, subject_of
from sentient_core.relevance import DECISIVE
from sentient_core.vocab import Source

DEBIAN = Path(__file__).resolve().parent.parent / "bench" / "data" / "debian" / "corpus"


@pytest.mark.parametrize(
    ("name", "subject"),
    [
        ("curl.changelog.txt", "curl"),
        ("python3.11.changelog.txt", "python3.11"),
        ("gnutls28.copyright.txt", "gnutls28"),
        ("Annual Report.pdf", "annual report"),
        ("README.md", ""),
        ("notes.txt", ""),
        ("a.txt", ""),
    ],
)
def test_a_file_is_about_what_its_name_says(name, subject):
    assert subject_of(Source("local", f"/home/u/docs/{name}")) == subject
    assert subject_of(Source("corpus", f"pydoc:topic:{name}")) == ""  # shipped: not named


def test_headings_and_overview_questions():
    assert heading_subject("curl (7.88.1-10+deb12u5) bookworm-security; urgency=high") == (
        "curl 7.88.1-10+deb12u5"
    )
    assert heading_subject("## Installing the tool:") == "Installing the tool"
    assert heading_subject("a heading that goes on far too long to name one thing") == ""
    assert overview_subject("What is known about  Python3.11 ?") == "python3.11"
    assert overview_subject("Which version fixed it?") == ""


def test_an_overview_of_a_named_subject_comes_from_its_files(tmp_path):
    for name in ("curl.changelog.txt", "openssl.changelog.txt", "curl.copyright.txt"):
        shutil.copy(DEBIAN / name, tmp_path / name)
    answerer = CorpusAnswerer([tmp_path], include_python_docs=False)
    got = answerer.answer("What is known about openssl?")
    # curl's changelog mentions OpenSSL often; the overview is still openssl's own file,
    # its opening first, and one answer (decisive) however alike its entries rank.
    assert {s.ref.rsplit("/", 1)[-1] for s in got.sources} == {"openssl.changelog.txt"}
    assert got.passages[0].startswith("openssl (")
    assert got.margin is not None and got.margin >= DECISIVE
    # A question that is not an overview of a file's subject is ranked as before.
    plain = answerer.answer("Which version of openssl fixed CVE-2026-28387?")
    assert plain.passages and "CVE-2026-28387" in plain.text


def test_curiosity_draws_the_user_share_from_the_users_topics():
    user = [CorpusTopic(f"user{i}", f"local:/u/{i}.txt", f"user {i}", user=True) for i in range(50)]
    shipped = [CorpusTopic(f"doc{i}", f"corpus:pydoc:{i}", f"doc {i}") for i in range(50)]
    for share, lo, hi in ((0.8, 0.75, 0.85), (0.5, 0.45, 0.55), (0.0, 0.0, 0.0)):
        c = Curiosity(None, None, CuriosityConfig(user_share=share), topics=lambda: shipped + user)
        picked = Counter()
        for _ in range(40):
            question, _ = c._answerable("anything", why="test")
            c.book.register(question, origin="curiosity", gap_type="smf_imbalance")
            picked[question.split()[-1].startswith("user")] += 1
        assert lo <= picked[True] / 40 <= hi, (share, picked)
    # No user topic left: the shipped docs; no topic at all: nothing to map onto.
    c = Curiosity(None, None, CuriosityConfig(user_share=1.0), topics=lambda: shipped[:1])
    assert c._answerable("x", why="t")[0] == "What is known about doc0?"
    assert Curiosity(None, None, topics=tuple)._answerable("x", why="t") == ("", "")


def test_a_free_run_over_a_user_corpus_learns_from_it(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(DEBIAN, corpus)
    report = run_free(30, tmp_path / "store", corpus_dirs=[corpus], include_python_docs=True)
    answered = report.answered_from
    assert sum(answered.values()) == report.queries
    assert answered.get("user", 0) >= 0.6 * report.queries, answered
    successes = len(report.successes)
    assert successes and report.successes_from.get("user", 0) >= 0.5 * successes
    # Its files' subjects are among what it learned, each from that file.
    learned = {s.asked: s.source for s in report.successes}
    assert learned.get("What is known about curl?", "").startswith("local:")


def test_a_bare_word_is_answered_only_where_it_is_defined():
    from sentient_core.learning.subjects import title_of

    answerer = CorpusAnswerer([], include_python_docs=True)
    # Defined: a document named for it (even one that never says its name), or a
    # title that is the word; "heap" is neither (heapq's name is not "heap").
    heapq = answerer.answer("What is known about heapq?")
    assert heapq.passages and heapq.sources[0].ref == "pydoc:module:heapq"
    assert heapq.text.startswith("heapq")  # the name heads its opening
    assert answerer.answer("What is known about heap?").text == ""
    lambdas = answerer.answer("What is known about lambdas?")
    assert lambdas.sources and lambdas.sources[0].ref == "pydoc:topic:lambda"
    # Mentioned, never defined: no answer ("certificate" was a list of SSL constants).
    assert answerer.answer("What is known about certificate?").text == ""
    assert not answerer.defines("certificate") and answerer.defines("heapq")
    # A title it only starts does not define a bare word; a phrase it starts, does.
    assert not answerer.defines("structure") and answerer.defines("structure of a program")
    # Shipped documents are named by their module or their title.
    assert title_of(Source("corpus", "pydoc:module:shelve"), "x") == "shelve"
    assert title_of(Source("corpus", "pydoc:topic:assert"), 'The "assert" statement\n') == (
        "assert statement"
    )


def test_a_phrase_lifted_from_one_passage_is_not_a_question(tmp_path):
    from sentient_core.learning.chaperone import Chaperone

    answerer = CorpusAnswerer([], include_python_docs=True)
    chaperone = Chaperone(None, None, answerer=answerer)
    # Free-run questions a strict reader rejected: fragments of the passage that
    # answered them, or phrases no document is named or titled for.
    for phrase in ("juggle multiple communication", "handles url traversal", "helper functions"):
        assert not chaperone.supported(f"What is known about {phrase}?"), phrase
    for phrase in ("binary bitwise operations", "assert statement", "shelve"):
        assert chaperone.supported(f"What is known about {phrase}?"), phrase
    assert chaperone.supported("Which version of curl fixed CVE-2024-2398?")  # not a phrase


def test_a_changelog_entry_is_answered_from_its_own_line(tmp_path):
    # gnutls28's changelog splits entries across passages; the entry's passage opens
    # with the entry above, and its package name holds digits.
    shutil.copy(DEBIAN / "gnutls28.changelog.txt", tmp_path / "gnutls28.changelog.txt")
    answerer = CorpusAnswerer([tmp_path], include_python_docs=False)
    for version in ("3.7.9-2+deb12u3", "3.7.9-2+deb12u6"):
        got = answerer.answer(f"What is known about gnutls28 {version}?")
        assert got.text.startswith(f"gnutls28 ({version})"), got.text[:80]
        start, end = got.spans[0]
        text = (DEBIAN / "gnutls28.changelog.txt").read_text()
        assert text[start:end].startswith(f"gnutls28 ({version})")  # provenance kept


def test_an_entry_whose_line_ends_a_passage_runs_on_through_the_next(tmp_path):
    shutil.copy(DEBIAN / "curl.changelog.txt", tmp_path / "curl.changelog.txt")
    answerer = CorpusAnswerer([tmp_path], include_python_docs=False)
    got = answerer.answer("What is known about curl 7.88.1-10+deb12u11?")
    first = got.passages[0]
    assert first.startswith("curl (7.88.1-10+deb12u11)") and "\n" in first.strip()
    assert "CVE-2025-0167" in first  # the entry's body, from the next passage
    start, end = got.spans[0]
    text = (DEBIAN / "curl.changelog.txt").read_text()
    assert " ".join(text[start:end].split()) == " ".join(first.split())
