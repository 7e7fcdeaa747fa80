"""Every gate of the loop counts what it lets through, and a gate that stops everything says so
(issue 23, item 7): the judge names the gate of each verdict, the session's stats count them,
its end renders the funnel, ``status`` shows the last session's, ``/metrics`` exports it."""

from __future__ import annotations

import json
from pathlib import Path

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.autonomy.funnel import MIN_REACHED, describe, funnel, silent_gates
from sentient_core.cli import main
from sentient_core.core import Core
from sentient_core.events import JudgeEvent, SessionEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.liveview import render
from sentient_core.vocab import GATES, SessionStats

CORPUS = Path(__file__).resolve().parents[1] / "bench" / "data" / "debian" / "corpus"


def _run(data: Path, iterations: int, *, relevant: float | None = None) -> SessionStats:
    with Core(data, durable=False) as core:
        learner = build_learner(
            core,
            LearnerSettings(
                learner=LearnerConfig(interval_s=0, session="funnel", max_iterations=100),
                caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
                corpus_dirs=(str(CORPUS),),
                include_python_docs=False,
            ),
            env={},
        )
        if relevant is not None:
            learner.judge.relevant = relevant  # a gate set to let nothing through
        with learner:
            return learner.run(iterations)


def test_the_funnel_follows_from_the_gates_in_order():
    stats = SessionStats(budget_stops=2, gates={"safety": 1, "relevance": 3, "learned": 4})
    counts = {g.gate: g for g in funnel(stats)}
    assert [g.gate for g in funnel(stats)] == list(GATES)
    assert counts["budget"].reached == 10 and counts["budget"].vetoed == 2
    assert counts["safety"].reached == 8 and counts["safety"].passed == 7
    assert counts["relevance"].reached == 7 and counts["relevance"].passed == 4
    assert counts["model"].passed == 4  # what passes the last gate is learned
    assert silent_gates(stats) == []
    assert describe(stats) == [
        "funnel: 10 initiative(s), budget -2, safety -1, relevance -3 → learned 4"
    ]
    stuck = SessionStats(gates={"relevance": MIN_REACHED})
    assert [g.gate for g in silent_gates(stuck)] == ["relevance"]
    assert silent_gates(SessionStats(gates={"relevance": MIN_REACHED - 1})) == []


def test_a_default_run_passes_every_gate_and_its_events_agree(tmp_path):
    stats = _run(tmp_path / "data", 12)
    # Every initiative gate lets something through (condensation may veto all of a short
    # run's few candidates: that is reported, and test_notes.py covers it).
    assert stats.gates.get("learned", 0) >= 1
    assert [g for g in silent_gates(stats) if g.gate in GATES] == []
    with Core(tmp_path / "data") as core:
        events = [e for _, e in read_events(core.store)]
    judged = [e for e in events if isinstance(e, JudgeEvent)]
    assert judged and all(e.gate in (*GATES, "learned") for e in judged)
    by_gate: dict[str, int] = {}
    for e in judged:
        by_gate[e.gate] = by_gate.get(e.gate, 0) + 1
    assert by_gate == stats.gates
    # A success is always "learned" and a "learned" verdict always a success.
    assert all((e.outcome == "success") == (e.gate == "learned") for e in judged)
    ended = [e for e in events if isinstance(e, SessionEvent) and e.state == "ended"]
    assert ended[-1].stats is not None and ended[-1].stats.gates == stats.gates


def test_a_gate_that_stops_everything_says_so(tmp_path, capsys):
    data = tmp_path / "data"
    stats = _run(data, 6, relevant=1.01)
    assert stats.gates.get("learned", 0) == 0
    assert [g.gate for g in silent_gates(stats)] == ["relevance"]
    with Core(data) as core:
        events = [e for _, e in read_events(core.store)]
    ended = next(e for e in reversed(events) if isinstance(e, SessionEvent) and e.state == "ended")
    shown = render(ended)
    assert shown is not None and "warning: the relevance gate stopped all" in shown
    assert main(["status", "--data-dir", str(data), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["funnel"]["silent"] == ["relevance"] and out["funnel"]["learned"] == 0
    gates = {g["gate"]: g for g in out["funnel"]["gates"]}
    assert gates["relevance"]["passed"] == 0 and gates["relevance"]["vetoed"] >= MIN_REACHED
    assert main(["status", "--data-dir", str(data)]) == 0
    assert "last session warning: the relevance gate stopped all" in capsys.readouterr().out


def test_promotion_gates_that_found_nothing_say_nothing():
    from sentient_core.autonomy.funnel import count_promotion

    stats = SessionStats(gates={"learned": 2})
    count_promotion(stats, "condensation", passed=0, vetoed=0)
    count_promotion(stats, "repair", passed=1, vetoed=2, retired=1)
    lines = describe(stats)
    assert lines == [
        "funnel: 2 initiative(s) → learned 2",
        "promotion: repair 3 candidate(s), 1 went up, 2 refused",
    ]
    assert stats.promotion["repair"] == {"reached": 3, "passed": 1, "vetoed": 2, "retired": 1}


def test_every_gate_of_a_40_iteration_offline_run_fires_or_says_why(tmp_path, capsys):
    # Issue 24's target: in a default offline run every funnel gate stops something or
    # is named with the reason it could not; so is every promotion gate and loop stage.
    from sentient_core.learning.idle import PROMOTION_GATES, STAGES

    data = tmp_path / "data"
    args = ["learn", "--data-dir", str(data), "--iterations", "40", "--interval", "0"]
    asked = ["What does the nonlocal statement do?", "What did the quokka council decide in 1742?"]
    for q in asked:
        args += ["--ask", q]
    assert main(args) == 0
    out = capsys.readouterr().out
    with Core(data) as core:
        events = [e for _, e in read_events(core.store)]
    ended = [e for e in events if isinstance(e, SessionEvent) and e.state == "ended"][-1]
    stats = ended.stats
    assert stats is not None and stats.iterations == 40
    for gate in GATES:
        fired = stats.gates.get(gate, 0) + (stats.budget_stops if gate == "budget" else 0)
        assert fired or stats.idle.get(gate), gate
        assert not (fired and gate in stats.idle), gate
    for gate in PROMOTION_GATES:
        assert stats.promotion.get(gate, {}).get("reached") or stats.idle.get(gate), gate
    for stage in STAGES:
        assert stage in stats.idle or (stage == "search" and stats.search.get("searches"))
    # No model configured offline: the model gate says so; recipes are off by default.
    assert stats.idle["model"].startswith("no judge model is configured")
    assert stats.idle["recipe verification"] == "recipes are off ([learner] recipes = false)"
    assert "did nothing: " in out and "model — no judge model is configured" in out
    # Every user question got exactly one closing event.
    closed = [e.question for e in events if e.kind == "question.closed"]
    assert sorted(closed) == sorted(asked)
