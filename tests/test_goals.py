"""Goals that finish (issue 24, item 6): resolution criteria, checked by the loop with the
judge's verdicts; ``focus list|close|done`` through the CLI and the HTTP API."""

from __future__ import annotations

import json

import msgspec
import pytest

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.autonomy.criteria import Criteria, evaluate, parse_condition
from sentient_core.autonomy.drives import FOCUS_GOALS, FOCUS_KEY, STALL_S, STATE_DB, Pursuit
from sentient_core.cli import main
from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.events import FocusEvent, JudgeEvent, QueryEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.questions import QuestionBook
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.liveview import render
from sentient_core.store import Store
from tests.servers.sentient import served

QUESTIONS = ("Where do quokkas live?", "What do quokkas eat?")


def test_the_condition_language():
    assert parse_condition("", questions=2) == Criteria(answers=True)
    assert parse_condition("", questions=0).empty
    both = parse_condition("  Questions   answered AND successes >= 3 ", questions=1)
    assert both == Criteria(answers=True, successes=3)
    assert both.text() == "questions answered and successes >= 3"
    assert parse_condition("2 successes", questions=0) == Criteria(successes=2)
    for bad, why in (
        ("questions answered", "needs questions"),
        ("successes >= 0", "N must be"),
        ("successes >= 101", "N must be"),
        ("whenever I say so", "unknown condition"),
        ("successes > 3", "unknown condition"),
    ):
        with pytest.raises(ArgumentError, match=why):
            parse_condition(bad, questions=0)
    answered = {"a?": 7}.get
    check = evaluate(Criteria(answers=True, successes=2), ("a?", "b?"), 2, answered)
    assert not check.resolved
    assert check.held == ("successes >= 2: 2 judged on the topic",)
    assert check.missing == ("questions answered: 1 of 2 (traces 7)",)
    done = evaluate(Criteria(answers=True), ("a?",), 0, answered)
    assert done.resolved and done.held == ("questions answered: 1 of 1 (traces 7)",)
    assert not evaluate(Criteria(), (), 5, answered).resolved  # no criteria: only the user


def test_goals_keep_their_criteria_and_a_v1_record_still_opens(tmp_path):
    with Store.open(tmp_path / "s", code_dim=8) as store:
        # A record as sentient-core wrote it before criteria existed (schema v1).
        old = {
            "v": 1,
            "next_id": 2,
            "goals": [{"id": "g1", "topic": "tides", "created": 5.0, "status": "open"}],
        }
        store.write(lambda txn: txn.put(STATE_DB, FOCUS_KEY, msgspec.msgpack.encode(old)))
        now = [1000.0]
        p = Pursuit(store, lambda: now[0])
        (g1,) = p.goals()
        assert (g1.questions, g1.condition, g1.criteria.empty) == ((), "", True)
        g2 = p.add("quokkas", questions=QUESTIONS[:1])
        assert g2.condition == "questions answered"
        # Declared again: new questions join the set, the condition is replaced.
        g2 = p.add("Quokkas", questions=QUESTIONS, condition="questions answered and 1 successes")
        assert g2.questions == QUESTIONS
        assert g2.condition == "questions answered and successes >= 1"
        with pytest.raises(ArgumentError, match="at most 16"):
            p.add("many", questions=[f"q{i}?" for i in range(17)])
        with pytest.raises(ArgumentError, match="unknown condition"):
            p.add("bad", condition="soon")
        closed = p.close(g1.id, reason="not needed")
        assert (closed.status, closed.ended_by, closed.reason) == ("closed", "close", "not needed")
        assert p.close(g1.id, reason="again") == closed  # an ended goal stays as it ended
        done = p.resolve(g2.id, by="done")
        assert (done.status, done.ended_by) == ("resolved", "done")
        now[0] += 10 * STALL_S
        assert p.propose() == []  # ended goals propose nothing, however long they wait
        again = p.add("tides")  # declared again: open, its ending forgotten
        assert (again.status, again.ended_by, again.reason, again.resolved_at) == (
            "open",
            "",
            "",
            None,
        )
        with store.read() as txn:
            assert FOCUS_GOALS.decode(txn.get(STATE_DB, FOCUS_KEY)).v == 2  # written back as v2


def _corpus(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "quokka_home.txt").write_text(
        "Quokkas live on Rottnest Island and Bald Island, off the coast of Western"
        " Australia, in dense scrub and woodland near fresh water.\n"
    )
    (corpus / "quokka_food.txt").write_text(
        "Quokkas eat grasses, sedges, succulents and the leaves of shrubs; quokkas feed at"
        " night and can go without water for long periods by eating succulent plants.\n"
    )
    (corpus / "tides.txt").write_text(
        "Tides are the rise and fall of sea levels caused by the gravity of the Moon and"
        " the Sun acting on the rotating Earth.\n"
    )
    return corpus


def _learner(core, corpus, clock=None, **config):
    settings = LearnerSettings(
        learner=LearnerConfig(interval_s=0, session="goals", max_iterations=40, **config),
        caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
        corpus_dirs=(str(corpus),),
        include_python_docs=False,
    )
    return build_learner(core, settings, env={}, **({"clock": clock} if clock else {}))


def test_the_loop_resolves_a_goal_by_its_question_set_and_it_stops_proposing(tmp_path):
    corpus = _corpus(tmp_path)
    with Core(tmp_path / "data", durable=False) as core:
        learner = _learner(core, corpus)
        with learner:
            goal = learner.pursuit.add("quokkas", questions=QUESTIONS)
            other = learner.pursuit.add("volcanoes", condition="successes >= 5")
            for _ in range(8):
                learner.step()
            resolved_goal = learner.pursuit.get(goal.id)
            assert learner.pursuit.get(other.id).status == "open"  # its criteria do not hold
        events = [e for _, e in read_events(core.store)]
        book = QuestionBook(core.store)
    # Each question of the set was asked through the loop and judged.
    asked = {e.id: e.question for e in events if isinstance(e, QueryEvent)}
    judged = [(asked[e.id], e) for e in events if isinstance(e, JudgeEvent)]
    for q in QUESTIONS:
        assert any(question == q for question, _ in judged), q
        assert book.get(q).status == "answered"
    (resolved,) = [e for e in events if isinstance(e, FocusEvent) and e.action == "resolved"]
    assert resolved.goal == goal.id
    traces = ", ".join(str(book.get(q).answered_by) for q in QUESTIONS)
    assert resolved.held == (f"questions answered: 2 of 2 (traces {traces})",)
    assert "questions answered: 2 of 2" in (render(resolved) or "")
    assert (resolved_goal.status, resolved_goal.ended_by) == ("resolved", "criteria")
    assert resolved_goal.held == resolved.held
    # After it resolved, nothing more was asked for it.
    at = events.index(resolved)
    later = [e for e in events[at:] if isinstance(e, QueryEvent)]
    about = {*QUESTIONS, "What is known about quokkas?"}
    assert not [e for e in later if e.question in about or e.topic == "quokkas"]


def test_a_stalled_goal_is_asked_its_unanswered_question_and_an_ended_goal_is_dropped(
    tmp_path,
):
    corpus = _corpus(tmp_path)
    now = [1_000_000.0]
    with Core(tmp_path / "data", durable=False) as core:
        learner = _learner(core, corpus, clock=lambda: now[0], reflect_every=0)
        with learner:
            unanswerable = "What did the quokka council decide in 1742?"
            goal = learner.pursuit.add("quokka council", questions=[unanswerable])
            for _ in range(3):
                learner.step()
            assert learner.curiosity.book.get(unanswerable).status == "waiting"
            assert learner.pursuit.get(goal.id).status == "open"
            now[0] += STALL_S + 1
            (gap,) = learner.goals.propose()
            # The stalled goal's initiative asks what is still open, not "is it resolved?".
            assert (gap.type, gap.topic, gap.question) == ("focus", "quokka council", unanswerable)
            learner.pursuit.close(goal.id, reason="no source has it")  # e.g. from the CLI
            learner.step()
            assert learner.curiosity.book.get(unanswerable).status == "dropped"
            now[0] += 2 * STALL_S
            assert learner.goals.propose() == []


def _cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_focus_close_and_done_through_the_cli(tmp_path, capsys):
    data = str(tmp_path / "data")
    code, out, _ = _cli(capsys, "focus", "--data-dir", data, "quokkas", "--question", QUESTIONS[0])
    assert code == 0 and "focus goal g1: quokkas  (criteria: questions answered)" in out
    code, out, _ = _cli(
        capsys, "focus", "--data-dir", data, "add", "tides", "--until", "2 successes"
    )
    assert code == 0 and "g2" in out and "successes >= 2" in out
    code, _, err = _cli(capsys, "focus", "--data-dir", data, "x", "--until", "soon")
    assert code == 2 and "unknown condition 'soon'" in err
    code, out, _ = _cli(capsys, "focus", "--data-dir", data, "list")
    assert code == 0
    assert "question [not asked yet]: Where do quokkas live?" in out
    assert "missing: questions answered: 0 of 1" in out
    code, out, _ = _cli(capsys, "focus", "--data-dir", data, "done", "tides")
    assert code == 0 and "focus goal g2 resolved: tides" in out
    code, out, _ = _cli(capsys, "focus", "--data-dir", data, "close", "g1", "--reason", "moved on")
    assert code == 0 and "focus goal g1 closed" in out
    code, _, err = _cli(capsys, "focus", "--data-dir", data, "close", "g9")
    assert code == 2 and "no focus goal 'g9'" in err
    code, _, err = _cli(capsys, "focus", "--data-dir", data, "done")
    assert code == 2 and "takes one ID" in err
    code, out, _ = _cli(capsys, "focus", "--data-dir", data, "--json")
    rows = json.loads(out)
    assert [(r["id"], r["status"], r["ended_by"]) for r in rows] == [
        ("g1", "closed", "close"),
        ("g2", "resolved", "done"),
    ]
    assert rows[0]["reason"] == "moved on"
    with Core(tmp_path / "data", readonly=True) as core:
        focus = [e for _, e in read_events(core.store) if isinstance(e, FocusEvent)]
    assert [(e.goal, e.action) for e in focus] == [
        ("g1", "declared"),
        ("g2", "declared"),
        ("g2", "resolved"),
        ("g1", "closed"),
    ]
    code, out, _ = _cli(capsys, "status", "--data-dir", data)
    assert "focus goals: open 0, resolved 1, closed 1" in out


def test_focus_list_close_and_done_over_http(tmp_path):
    with served(tmp_path) as s:
        made = s.client.post(
            "/focus", json={"topic": "quokkas", "questions": list(QUESTIONS)}
        ).json()
        assert (made["id"], made["condition"], made["questions"]) == (
            "g1",
            "questions answered",
            list(QUESTIONS),
        )
        bad = s.client.post("/focus", json={"topic": "x", "condition": "soon"})
        assert bad.status_code == 400 and "unknown condition" in bad.json()["detail"]
        s.client.post("/focus", json={"topic": "tides"})
        (row, _) = s.client.get("/focus").json()["goals"]
        assert row["check"]["missing"] == ["questions answered: 0 of 2"]
        done = s.client.post("/focus/done", json={"goal": "tides"}).json()
        assert (done["id"], done["status"]) == ("g2", "resolved")
        closed = s.client.post("/focus/close", json={"goal": "g1", "reason": "later"}).json()
        assert (closed["status"], closed["reason"]) == ("closed", "later")
        assert s.client.post("/focus/close", json={"goal": "g7"}).status_code == 404
        assert s.client.post("/focus/jump", json={"goal": "g1"}).status_code == 404
        statuses = [g["status"] for g in s.client.get("/focus").json()["goals"]]
        assert statuses == ["closed", "resolved"]
        st = s.client.get("/learning/status").json()
        assert st["focus"] == {"open": 0, "resolved": 1, "closed": 1}
