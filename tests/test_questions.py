"""The question book: persisted across sessions, back-off after failure, every user question
ends in an event (through real parts: LMDB store, offline chaperone over real files)."""

from __future__ import annotations

import pytest

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.events import QueryEvent, QuestionEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.questions import MAX_BACKOFF, QuestionBook, normalise_question
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.store import Store
from tests.test_learner import CORPUS, FixedClock


def test_keys_ignore_case_spacing_and_the_question_mark():
    assert normalise_question("  What IS  a Tide ? ") == normalise_question("what is a tide")
    book = QuestionBook()
    first, new = book.register("What is a tide?")
    again, new_again = book.register("what   is a TIDE")
    assert new and not new_again and again == first
    with pytest.raises(ArgumentError):
        book.register("   ")


def test_failures_back_off_and_return_only_when_something_changed():
    book = QuestionBook()
    book.register("Why is the sky green?", origin="curiosity", gap_type="smf_imbalance")
    waits = []
    for _ in range(8):
        rec = book.record_outcome(
            "Why is the sky green?", "failure", memory_mark="m", sources_mark="s"
        )
        waits.append(rec.retry_after - book.step)
    assert waits == [1, 2, 4, 8, 16, 32, 64, 64]
    assert MAX_BACKOFF == 64
    rec = book.get("why is the sky green")
    assert rec.status == "waiting" and rec.failures == 8
    for _ in range(64):
        book.advance()
    assert book.due("m", "s") == ([], [])  # back-off over, but nothing changed
    # Only memory changed: a candidate to check against memory, not to ask again.
    assert [r.question for r in book.due("m2", "s")[1]] == ["Why is the sky green?"]
    assert book.due("m2", "s")[0] == []
    # The sources changed: back to the queue.
    assert [r.question for r in book.due("m", "s2")[0]] == ["Why is the sky green?"]
    book.requeue(book.due("m", "s2")[0])
    assert book.get("Why is the sky green?").status == "queued"


def test_the_book_persists_across_processes_of_the_store(tmp_path):
    with Store.open(tmp_path / "s", code_dim=16) as store:
        book = QuestionBook(store)
        book.register("What is a tide?")
        book.register("What is magma?", origin="followup", gap_type="memory_miss")
        book.advance()
        book.record_outcome("What is a tide?", "success", memory_mark="1", sources_mark="x")
    with Store.open(tmp_path / "s") as store:
        again = QuestionBook(store)
        assert again.step == 1
        assert again.get("what is a tide").status == "answered"
        assert [r.question for r in again.records("queued")] == ["What is magma?"]
        assert again.counts() == {
            "queued": 1,
            "asked": 0,
            "answered": 1,
            "waiting": 0,
            "dropped": 0,
        }


def _learner(core, corpus_dir, session):
    return build_learner(
        core,
        LearnerSettings(
            learner=LearnerConfig(interval_s=0, session=session, reflect_every=0),
            corpus_dirs=(str(corpus_dir),),
            include_python_docs=False,
            caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
        ),
        clock=FixedClock(),
        env={},
    )


@pytest.fixture
def corpus_dir(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    for name, text in CORPUS.items():
        (d / name).write_text(text)
    return d


def _asked(core, session):
    return [
        e.question
        for _, e in read_events(core.store)
        if isinstance(e, QueryEvent) and e.session == session and e.question
    ]


def test_a_second_session_does_not_ask_again_what_the_first_answered(tmp_path, corpus_dir):
    question = "How do honey bees communicate the direction of flowers?"
    with Core(tmp_path / "d") as core:
        with _learner(core, corpus_dir, "one") as learner:
            learner.ask(question)
            learner.run(2)
        first = _asked(core, "one")
        assert question in first
    with Core(tmp_path / "d") as core:
        with _learner(core, corpus_dir, "two") as learner:
            learner.ask(question)
            learner.run(2)
        second = _asked(core, "two")
        assert question not in second
        # Nothing the first session settled (answered or still waiting) is asked again now.
        settled = {q for q in first if learner.curiosity.book.get(q).status != "queued"}
        assert not settled & set(second), settled & set(second)
        events = [
            e
            for _, e in read_events(core.store)
            if isinstance(e, QuestionEvent) and e.session == "two"
        ]
        assert [e.status for e in events if e.question == question][:1] == ["answered"]


def test_every_user_question_ends_in_an_event(tmp_path, corpus_dir):
    questions = [
        "How do honey bees communicate the direction of flowers?",
        "What causes ocean tides?",
        "Why do volcanoes erupt?",
        "What is the airspeed velocity of an unladen swallow?",
        "Which magma is viscous and explosive?",
    ]
    with Core(tmp_path / "d") as core, _learner(core, corpus_dir, "s") as learner:
        for q in questions:
            learner.ask(q)
        learner.run(4)
        events = [
            e
            for _, e in read_events(core.store)
            if isinstance(e, QuestionEvent) and e.origin == "user"
        ]
        final = {}
        for e in events:
            final[normalise_question(e.question)] = e.status
        assert set(final) == {normalise_question(q) for q in questions}
        # Each question was queued, and then asked or answered from memory.
        for q in questions:
            statuses = [
                e.status for e in events if normalise_question(e.question) == normalise_question(q)
            ]
            assert statuses[0] == "queued" and statuses[-1] in ("asked", "answered"), (q, statuses)
