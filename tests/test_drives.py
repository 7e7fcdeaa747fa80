"""Drives: curiosity's ≤ 3 proposals per tick (order, tie-break, no duplicate topics) and
the pursuit of focus goals (7-day rule under an injected clock, persistence in LMDB)."""

from __future__ import annotations

import calendar
import itertools
import random

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_core.autonomy.drives import (
    FOCUS_GOALS,
    FOCUS_KEY,
    MAX_GOALS,
    MAX_TOPIC_CHARS,
    STALL_S,
    STATE_DB,
    CuriosityDrive,
    FocusGoal,
    Pursuit,
    normalise_topic,
)
from sentient_core.store import SchemaVersionError, Store
from sentient_core.vocab import GAP_TYPES, Gap

T0 = float(calendar.timegm((2024, 3, 9, 12, 0, 0)))
DAY = 86400.0


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def gap(type_: str, topic: str, priority: float = 0.5, question: str = "") -> Gap:
    return Gap(
        type=type_, topic=topic, question=question or f"What about {topic}?", priority=priority
    )


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "store", code_dim=8)
    yield s
    s.close()


# -- curiosity -----------------------------------------------------------------------------------


def test_at_most_three_highest_priority_first():
    gaps = [gap("smf_imbalance", f"axis {i}", priority=i / 10) for i in range(10)]
    drive = CuriosityDrive()
    out = drive.propose(gaps)
    assert [g.topic for g in out] == ["axis 9", "axis 8", "axis 7"]
    assert (drive.seen, drive.proposed, drive.dropped_cap, drive.dropped_duplicate) == (10, 3, 7, 0)


def test_tie_break_by_type_then_topic():
    gaps = [
        gap("smf_imbalance", "a"),
        gap("coherence_drop", "b"),
        gap("memory_miss", "c"),
        gap("question", "d"),
        gap("question", "c2"),
    ]
    out = CuriosityDrive().propose(gaps)
    assert [(g.type, g.topic) for g in out] == [
        ("question", "c2"),
        ("question", "d"),
        ("memory_miss", "c"),
    ]
    out = CuriosityDrive(max_proposals=3).propose(gaps[:3])
    assert [g.type for g in out] == ["memory_miss", "coherence_drop", "smf_imbalance"]


def test_spec_type_order_is_kept():
    spec = ["question", "memory_miss", "coherence_drop", "smf_imbalance"]
    assert sorted(spec, key=GAP_TYPES.index) == spec
    assert set(GAP_TYPES) == {
        "question",
        "memory_miss",
        "coherence_drop",
        "smf_imbalance",
        "debt",
        "focus",
        "link",
    }


def test_priority_beats_type():
    out = CuriosityDrive().propose([gap("question", "q", 0.4), gap("smf_imbalance", "s", 0.6)])
    assert [g.type for g in out] == ["smf_imbalance", "question"]


def test_no_duplicate_topics_best_one_kept():
    gaps = [
        gap("smf_imbalance", "Entropy", 0.9),
        gap("memory_miss", "  entropy ", 0.5),
        gap("question", "ENTROPY", 0.9),
        gap("coherence_drop", "coherence", 0.1),
    ]
    drive = CuriosityDrive()
    out = drive.propose(gaps)
    assert [(g.type, g.topic) for g in out] == [
        ("question", "ENTROPY"),
        ("coherence_drop", "coherence"),
    ]
    assert drive.dropped_duplicate == 2
    assert len({normalise_topic(g.topic) for g in out}) == len(out)


def test_blank_topics_are_keyed_by_question():
    gaps = [
        gap("question", "", question="Why?"),
        gap("question", " ", question="How?"),
        gap("question", "", question="why?"),
    ]
    out = CuriosityDrive().propose(gaps)
    assert sorted(g.question for g in out) == ["How?", "Why?"]


def test_order_does_not_depend_on_input_order():
    gaps = [
        gap("question", "x", 0.5),
        gap("memory_miss", "x", 0.5),
        gap("memory_miss", "y", 0.5),
        gap("coherence_drop", "z", 0.7),
        gap("smf_imbalance", "w", 0.5),
        gap("question", "x", 0.5, question="Other wording?"),
    ]
    results = {tuple(CuriosityDrive().propose(list(p))) for p in itertools.permutations(gaps)}
    assert len(results) == 1
    (only,) = results
    assert [(g.type, g.topic) for g in only] == [
        ("coherence_drop", "z"),
        ("question", "x"),
        ("memory_miss", "y"),
    ]


def test_nan_priority_is_deterministic():
    gaps = [
        gap("question", "a", float("nan")),
        gap("question", "b", 0.1),
        gap("question", "c", 0.0),
    ]
    outs = {
        tuple(g.topic for g in CuriosityDrive().propose(p)) for p in itertools.permutations(gaps)
    }
    assert outs == {("b", "a", "c")}


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_max_proposals(n):
    gaps = [gap("question", str(i)) for i in range(5)]
    assert len(CuriosityDrive(n).propose(gaps)) == n


@pytest.mark.parametrize("bad", [-1, 4, 100, 2.0, True, "3"])
def test_max_proposals_is_capped_at_three(bad):
    with pytest.raises(ValueError, match="max_proposals"):
        CuriosityDrive(bad)


def test_empty():
    assert CuriosityDrive().propose([]) == []


TYPES = ["question", "memory_miss", "coherence_drop", "smf_imbalance", "debt", "focus", "link"]
gap_st = st.builds(
    gap,
    st.sampled_from(TYPES),
    st.sampled_from(["a", "A", "b", " b", "c", "d", "e", "f"]),
    st.sampled_from([0.0, 0.3, 0.5, 0.5, 0.8, 1.0]),
    st.sampled_from(["q1", "q2"]),
)


@settings(max_examples=300, deadline=None)
@given(gaps=st.lists(gap_st, max_size=20), seed=st.integers(0, 2**32 - 1))
def test_proposals_property(gaps, seed):
    drive = CuriosityDrive()
    out = drive.propose(gaps)
    assert len(out) <= 3
    keys = [normalise_topic(g.topic) for g in out]
    assert len(set(keys)) == len(keys)
    assert out == sorted(out, key=CuriosityDrive.order_key)
    shuffled = list(gaps)
    random.Random(seed).shuffle(shuffled)
    assert CuriosityDrive().propose(shuffled) == out
    for g in gaps:
        k = normalise_topic(g.topic)
        if k in keys:  # the kept gap is the best of its topic
            assert CuriosityDrive.order_key(out[keys.index(k)]) <= CuriosityDrive.order_key(g)
        else:  # a dropped topic is never better than the last proposal
            assert len(out) == 3
            assert CuriosityDrive.order_key(g) > CuriosityDrive.order_key(out[-1])


# -- pursuit ---------------------------------------------------------------------------------------


def test_add_dedupes_by_normalised_topic():
    p = Pursuit(None, Clock())
    g1 = p.add("Prime  Numbers")
    assert (g1.id, g1.topic, g1.status, g1.progress_count, g1.last_progress) == (
        "g1",
        "Prime Numbers",
        "open",
        0,
        None,
    )
    assert g1.created == T0
    assert p.add("  prime numbers ") == g1
    g2 = p.add("Graph theory")
    assert g2.id == "g2"
    assert [g.id for g in p.goals()] == ["g1", "g2"]
    assert p.find("PRIME numbers") == g1
    assert p.find("nothing") is None
    assert p.get("g2") == g2


def test_new_goal_gets_an_advance_question_at_once_then_one_per_stall():
    clock = Clock()
    p = Pursuit(None, clock)
    p.add("sedenions")
    (g,) = p.propose()
    assert g == Gap(
        type="focus",
        topic="sedenions",
        question="What is known about sedenions?",
        priority=g.priority,
        detail="advance_question",
    )
    assert p.propose() == []  # one initiative per stall, not one per tick
    clock.t += STALL_S - 1
    assert p.propose() == []
    clock.t += 1
    (again,) = p.propose()  # still no progress a week later: ask again
    assert again.detail == "advance_question"
    assert p.proposed_advance == 2
    assert p.proposed_check == 0


def test_progress_then_seven_days_gives_check_resolution():
    clock = Clock()
    p = Pursuit(None, clock)
    goal = p.add("holography")
    p.propose()
    clock.t += DAY
    goal = p.record_progress(goal.id)
    assert (goal.progress_count, goal.last_progress) == (1, T0 + DAY)
    for dt in (0, DAY, 6 * DAY, 7 * DAY - 1):  # recent progress: nothing
        clock.t = T0 + DAY + dt
        assert p.propose() == [], dt
    clock.t = T0 + 8 * DAY  # exactly 7 days without progress
    (g,) = p.propose()
    assert g.type == "focus"
    assert g.topic == "holography"
    assert g.detail == "check_resolution"
    assert "resolved" in g.question and "holography" in g.question
    assert p.proposed_check == 1
    assert p.propose() == []
    clock.t += STALL_S
    assert [x.detail for x in p.propose()] == ["check_resolution"]


def test_progress_before_the_first_proposal_defers_it():
    clock = Clock()
    p = Pursuit(None, clock)
    goal = p.add("topic")
    p.record_progress(goal.id)
    assert p.propose() == []
    clock.t += 7 * DAY
    assert [g.detail for g in p.propose()] == ["check_resolution"]


def test_resolved_goals_propose_nothing_and_re_adding_reopens():
    clock = Clock()
    p = Pursuit(None, clock)
    goal = p.add("topic")
    p.record_progress(goal.id)
    clock.t += DAY
    resolved = p.resolve(goal.id)
    assert (resolved.status, resolved.resolved_at) == ("resolved", T0 + DAY)
    assert p.resolve(goal.id) == resolved  # idempotent
    clock.t += 30 * DAY
    assert p.propose() == []
    assert p.goals(include_resolved=False) == []
    reopened = p.add("TOPIC")
    assert (reopened.id, reopened.status, reopened.progress_count) == ("g1", "open", 1)
    assert reopened.resolved_at is None
    assert [g.detail for g in p.propose()] == ["check_resolution"]


def test_only_stalled_goals_and_oldest_first():
    clock = Clock()
    p = Pursuit(None, clock)
    a = p.add("alpha")
    clock.t += 1
    b = p.add("beta")
    clock.t += 1
    c = p.add("gamma")
    assert [g.topic for g in p.propose()] == ["alpha", "beta", "gamma"]
    clock.t += DAY
    p.record_progress(b.id)
    clock.t = T0 + 7 * DAY + 2
    # alpha, gamma: 7 days since their proposal; beta: 6 days since progress.
    assert [(g.topic, g.detail) for g in p.propose()] == [
        ("alpha", "advance_question"),
        ("gamma", "advance_question"),
    ]
    clock.t = T0 + 8 * DAY + 2
    assert [(g.topic, g.detail) for g in p.propose()] == [("beta", "check_resolution")]
    p.remove(a.id)
    assert [g.id for g in p.goals()] == [b.id, c.id]


def test_peek_does_not_mark():
    p = Pursuit(None, Clock())
    p.add("x")
    assert len(p.propose(mark=False)) == 1
    assert len(p.propose(mark=False)) == 1
    assert len(p.propose()) == 1
    assert p.propose(mark=False) == []


def test_errors():
    p = Pursuit(None, Clock())
    for bad in ("", "   ", "x" * (MAX_TOPIC_CHARS + 1)):
        with pytest.raises(ValueError, match="topic"):
            p.add(bad)
    for call in (p.record_progress, p.resolve, p.get, p.remove):
        with pytest.raises(KeyError, match="g9"):
            call("g9")
    with pytest.raises(ValueError, match="stall_s"):
        Pursuit(None, Clock(), stall_s=0)
    assert p.goals() == []


def test_goal_count_is_bounded():
    p = Pursuit(None, Clock())
    for i in range(MAX_GOALS):
        p.add(f"topic {i}")
    with pytest.raises(ValueError, match=str(MAX_GOALS)):
        p.add("one more")
    assert p.add("topic 7").id == "g8"  # an existing topic is still found
    assert len(p.goals()) == MAX_GOALS


# -- pursuit persistence ---------------------------------------------------------------------------


def test_goals_persist_across_reopen(tmp_path):
    path = tmp_path / "store"
    clock = Clock()
    with Store.open(path, code_dim=8) as s:
        p = Pursuit(s, clock)
        a = p.add("alpha")
        p.add("beta")
        assert len(p.propose()) == 2
        clock.t += DAY
        p.record_progress(a.id)
        before = p.goals()
    with Store.open(path) as s:
        p2 = Pursuit(s, clock)
        assert p2.goals() == before
        assert p2.propose() == []  # last_proposed was persisted: no repeat after a restart
        assert p2.add("gamma").id == "g3"  # ids are never reused
        with s.read() as txn:
            record = FOCUS_GOALS.decode(txn.get(STATE_DB, FOCUS_KEY))
        assert [g.topic for g in record.goals] == ["alpha", "beta", "gamma"]
        assert record.goals[0].progress_count == 1
        clock.t = T0 + 8 * DAY
        assert [(g.topic, g.detail) for g in p2.propose()] == [
            ("alpha", "check_resolution"),
            ("beta", "advance_question"),
            ("gamma", "advance_question"),  # new, never proposed
        ]


def test_one_write_per_change_and_none_on_a_quiet_tick(store, monkeypatch):
    writes = []
    real = store.write
    monkeypatch.setattr(store, "write", lambda fn: writes.append(1) or real(fn))
    clock = Clock()
    p = Pursuit(store, clock)
    p.add("a")
    p.add("b")
    assert len(writes) == 2
    assert len(p.propose()) == 2
    assert len(writes) == 3  # both goals stamped in one transaction
    for _ in range(5):
        assert p.propose() == []
    assert len(writes) == 3


def test_two_pursuits_on_one_store_share_goals(store):
    p1, p2 = Pursuit(store, Clock()), Pursuit(store, Clock())
    g = p1.add("shared")
    assert p2.add("SHARED") == g
    p2.record_progress(g.id)
    assert p1.get(g.id).progress_count == 1


def test_newer_record_version_is_refused(store):
    store.write(
        lambda txn: txn.put(STATE_DB, FOCUS_KEY, msgspec.msgpack.encode({"v": 3, "goals": []}))
    )
    with pytest.raises(SchemaVersionError):
        Pursuit(store, Clock()).goals()


def test_focus_goal_fields():
    assert FocusGoal.__struct_fields__[:6] == (
        "id",
        "topic",
        "created",
        "last_progress",
        "status",
        "progress_count",
    )
