"""Every user question ends (issue 24, item 7): one closing event per asking — answered
(with the passage), already known, or not found (what was tried, why it stopped) — and a
question not found re-opens when the sources change; real learner, real LMDB store."""

from __future__ import annotations

from collections import Counter

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.core import Core
from sentient_core.events import QuestionClosedEvent, QuestionEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.questions import QuestionBook
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.liveview import render
from tests.servers.sentient import served

KNOWN = "Where do quokkas live?"
UNKNOWN = "What did the quokka council decide in 1742?"


def _learner(core, corpus, session, **config):
    return build_learner(
        core,
        LearnerSettings(
            learner=LearnerConfig(interval_s=0, session=session, max_iterations=40, **config),
            caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
            corpus_dirs=(str(corpus),),
            include_python_docs=False,
        ),
        env={},
    )


def _corpus(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "quokkas.txt").write_text(
        "Quokkas live on Rottnest Island and Bald Island, off the coast of Western"
        " Australia, in dense scrub and woodland near fresh water.\n"
    )
    (corpus / "tides.txt").write_text(
        "Tides are the rise and fall of sea levels caused by the gravity of the Moon and"
        " the Sun acting on the rotating Earth.\n"
    )
    return corpus


def _events(core, session):
    return [e for _, e in read_events(core.store) if e.session == session]


def test_every_user_question_ends_once_and_a_question_not_found_reopens(tmp_path):
    corpus = _corpus(tmp_path)
    with Core(tmp_path / "data", durable=False) as core:
        with _learner(core, corpus, "one") as learner:
            learner.ask(KNOWN)
            learner.ask(UNKNOWN)
            learner.run(6)
            learner.ask(KNOWN)  # answered before: it ends at once, as already known
            assert learner.closing.summary() == {
                "open": 0,
                "answered": 0,
                "already_known": 1,
                "not_found": 1,
            }
        first = _events(core, "one")
        # The sources change: a file that answers the question lands in the corpus.
        (corpus / "council.txt").write_text(
            "In 1742 the quokka council decided that every quokka island keeps a reserve of"
            " fresh water for the dry season; the quokka council met on Rottnest Island.\n"
        )
        with _learner(core, corpus, "two") as learner:
            learner.run(4)
        second = _events(core, "two")
        book = QuestionBook(core.store)
    closed = [e for e in first if isinstance(e, QuestionClosedEvent)]
    assert Counter(e.question for e in closed) == {KNOWN: 2, UNKNOWN: 1}  # one per asking
    answered, again, missing = (
        next(e for e in closed if e.question == KNOWN and e.outcome == "answered"),
        next(e for e in closed if e.question == KNOWN and e.outcome != "answered"),
        next(e for e in closed if e.question == UNKNOWN),
    )
    assert answered.trace_id >= 0 and "Rottnest Island" in answered.passage
    assert answered.source.endswith("quokkas.txt") and answered.tried == (
        "asked: success at the learned gate",
    )
    assert (again.outcome, again.trace_id) == ("already_known", answered.trace_id)
    assert "Rottnest Island" in again.passage
    assert missing.outcome == "not_found" and missing.attempts == 1
    assert missing.tried[0].startswith("asked: ") and "gate" in missing.tried[0]
    assert "task-commitment drive is off" in missing.reason
    assert "re-opens when the sources change" in missing.reason
    assert "NOT FOUND" in (render(missing) or "")
    # Session two: re-opened (the user sees it), asked, and it ends again, answered.
    reopened = [e for e in second if isinstance(e, QuestionEvent) and e.status == "reopened"]
    assert [e.question for e in reopened] == [UNKNOWN]
    assert "sources changed" in reopened[0].reason
    (ended,) = [e for e in second if isinstance(e, QuestionClosedEvent)]
    assert (ended.question, ended.outcome) == (UNKNOWN, "answered")
    assert "1742" in ended.passage and ended.source.endswith("council.txt")
    assert second.index(reopened[0]) < second.index(ended)
    assert book.get(UNKNOWN).closed == "answered"


def test_not_found_lists_the_routes_the_commitment_drive_tried(tmp_path):
    corpus = _corpus(tmp_path)
    with Core(tmp_path / "data", durable=False) as core:
        with _learner(core, corpus, "routes", commit_routes=2) as learner:
            learner.ask(UNKNOWN)
            learner.run(2)
        closed = [e for e in _events(core, "routes") if isinstance(e, QuestionClosedEvent)]
    (missing,) = closed
    assert missing.outcome == "not_found"
    assert missing.attempts == len(missing.tried) >= 2
    routes = [t.split(":")[0] for t in missing.tried]
    assert routes[0] == "asked" and set(routes[1:]) <= {"relax", "wider", "deeper", "corpus"}
    assert "routes exhausted" in missing.reason or "no route for the" in missing.reason


def test_the_api_shows_how_each_user_question_ended(tmp_path):
    with served(tmp_path) as s:
        reply = s.client.post("/ask", json={"question": UNKNOWN}).json()
        assert (reply["status"], reply["closed"]) == ("queued", "")
        s.client.post("/learning/start")
        s.wait_for(lambda st: st["user_questions"].get("open") == 0, what="the question to end")
        s.client.post("/learning/stop")
        (row,) = s.client.get("/questions").json()["questions"]
        assert (row["question"], row["closed"]) == (UNKNOWN, "not_found")
        assert row["status"] == "waiting" and row["tried"][0].startswith("asked: ")
        st = s.client.get("/learning/status").json()
        assert st["user_questions"]["not_found"] == 1
