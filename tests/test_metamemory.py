"""Meta-memory components (SPEC §5) on a real LMDB store: surprise events, credit with
hysteresis against the plain-Python reference, source weights, epistemic debts, the
wisdom state machine (hypothesis), the scorer's snapshots and their replay."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentient_core.errors import ArgumentError
from sentient_core.memory import HolographicMemory
from sentient_core.metamemory import (
    FACTOR_NAMES,
    TRANSITIONS,
    DebtEvidence,
    DebtStateError,
    DiscriminatingTest,
    FactorContext,
    GateNotMetError,
    IllegalTransitionError,
    JudgedOutcome,
    MetaMemory,
    ReplayError,
    ScorerModel,
    SurpriseBasis,
    base_priority,
    batches_of,
    factor_matrix,
    make_event,
    replay,
)
from sentient_core.metamemory.scorer import SNAPSHOTS
from sentient_core.store import Store, check_integrity
from tests import naive_credit

T0 = 1_700_000_000.0
DAY = 86400.0
LLM = "llm:127.0.0.1/liar"
CORPUS = "corpus:/data/corpus"


class Clock:
    def __init__(self, t: float = T0, step: float = 1.0) -> None:
        self.t, self.step = t, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store", code_dim=256) as s:
        yield s


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def memory(store, clock):
    return HolographicMemory(store, clock=clock)


@pytest.fixture
def mm(memory, clock):
    return MetaMemory(memory, clock=clock)


def event(s, *, wrong=-1, right=-1, source=LLM, correcting=CORPUS, domain="nginx", session="a"):
    return make_event(
        context="which nginx version fixed the bug",
        action="recall",
        magnitude=s,
        basis=SurpriseBasis(rule="test", inputs={"s": str(s)}),
        domain=domain,
        source=source,
        cause="disagreement",
        time=T0,
        session=session,
        source_memory=wrong,
        correcting_memory=right,
        correcting_source=correcting,
    )


# ------------------------------------------------------------------ surprise events


def test_events_are_checked_and_logged_in_order(mm):
    with pytest.raises(ArgumentError):
        event(1.5)
    with pytest.raises(ArgumentError):
        make_event(
            context="q",
            action="recall",
            magnitude=0.5,
            basis=SurpriseBasis(rule="r"),
            domain="d",
            source=LLM,
            cause="no-such-cause",
            time=T0,
        )
    ids = [mm.surprises.record(event(s)).id for s in (0.3, 0.9, 0.1)]
    assert ids == [0, 1, 2]
    assert [e.magnitude for e in mm.surprises.recent(3)] == [0.1, 0.9, 0.3]
    assert mm.counters()["surprise.by_cause.disagreement"] == 3


# ------------------------------------------------------------------ credit


@pytest.mark.parametrize("s", [1.0, 0.6, 0.3, 0.15])
def test_credit_strength_follows_the_reference_event_by_event(mm, memory, s):
    wrong = memory.store("nginx 1.99.9 fixed it").id
    right = memory.store("nginx 1.25.3 fixed it").id
    ref = ([0.0, 0.0], [0, 0], [0, 0], [1.0, 1.0])
    seen_wrong, seen_right = [], []
    for _ in range(8):
        mm.observe(event(s, wrong=wrong, right=right))
        ref = naive_credit.apply_events(*ref, [0, 1], [-1, 1], [s, s])[:4]
        seen_wrong.append(memory.get(wrong).strength)
        seen_right.append(memory.get(right).strength)
        assert seen_wrong[-1] == pytest.approx(ref[3][0], abs=1e-12)
        assert seen_right[-1] == pytest.approx(ref[3][1], abs=1e-12)
    first_drop = next((i + 1 for i, x in enumerate(seen_wrong) if x < 1.0), None)
    # SPEC: s = 1.0 changes strength on the 2nd event, s = 0.6 on the 4th; never on one.
    assert first_drop == {1.0: 2, 0.6: 4}.get(s, first_drop)
    if s < 0.2:
        assert first_drop is None and seen_right[-1] == 1.0
    if first_drop is not None:
        assert first_drop >= 2
        assert seen_right[first_drop - 1] > 1.0  # the correcting trace gains at the same time


def test_one_strong_signal_never_moves_strength_and_alternation_never_opens_the_gate(mm, memory):
    t = memory.store("curl 8.99 fixed it").id
    mm.credit.apply([_sig(t, -1, 1.0)])
    assert memory.get(t).strength == 1.0
    for i in range(10):  # alternating directions: the streak never reaches 2
        mm.credit.apply([_sig(t, -1 if i % 2 else 1, 1.0)])
    assert memory.get(t).strength == 1.0
    assert mm.counters()["credit.gate_opens"] == 0


def _sig(trace, direction, s):
    from sentient_core.metamemory import CreditSignal

    return CreditSignal(trace=trace, direction=direction, magnitude=s)


def test_a_trace_at_the_floor_is_retired_superseded_by_the_correction(mm, memory, store):
    wrong = memory.store("gnutls 9.9 fixed it").id
    right = memory.store("gnutls 3.7 fixed it").id
    for _ in range(60):
        if memory.get(wrong).retired:
            break
        mm.observe(event(1.0, wrong=wrong, right=right))
    rec = memory.get(wrong)
    assert rec is not None and rec.retired and rec.strength == pytest.approx(0.05)
    floor = mm.credit.floor_record(wrong)
    assert floor is not None and floor.superseded_by == right and "superseded" in floor.reason
    assert memory.get(right).strength == pytest.approx(1.5)  # ceiling, never above
    assert check_integrity(store).ok


def test_outcome_counts_change_only_from_judged_outcomes(mm, memory):
    t = memory.store("expat 2.5 fixed it").id
    memory.recall("expat fixed")
    rec = memory.get(t)
    assert (rec.success_count, rec.failure_count) == (0, 0)
    assert mm.record_outcome([t], "could_not_verify") == 0
    assert mm.record_outcome([t], "success") == 1
    assert mm.record_outcome([t], "failure") == 1
    assert mm.record_outcome([t], "failure") == 1
    rec = memory.get(t)
    assert (rec.success_count, rec.failure_count) == (1, 2)
    with pytest.raises(ArgumentError):
        mm.record_outcome([t], "great")


def test_credit_survives_a_restart(tmp_path, clock):
    with Store.open(tmp_path / "s", code_dim=256) as st_:
        mem = HolographicMemory(st_, clock=clock)
        t = mem.store("libxml2 2.99 fixed it").id
        r = mem.store("libxml2 2.9.14 fixed it").id
        MetaMemory(mem, clock=clock).observe(event(1.0, wrong=t, right=r))
    with Store.open(tmp_path / "s") as st_:
        mem = HolographicMemory(st_, clock=clock)
        mm = MetaMemory(mem, clock=clock)
        assert mm.credit.state(t)[1:] == (1, -1)
        mm.observe(event(1.0, wrong=t, right=r))  # the second signal after the restart
        assert mem.get(t).strength < 1.0


# ------------------------------------------------------------------ source weights


def test_sources_punish_at_055_at_once_and_reward_the_correcting_source(mm):
    d = mm.sources.observe(event(0.55))
    assert [(x.source, x.action) for x in d] == [(LLM, "punished"), (CORPUS, "rewarded")]
    assert mm.sources.weight("nginx", LLM) < 1.0 < mm.sources.weight("nginx", CORPUS)
    assert mm.sources.weight("curl", LLM) == 1.0  # per domain


def test_sources_below_055_punish_only_on_the_second_failure_in_the_window(mm):
    first = mm.sources.observe(event(0.4, correcting=""))
    assert [x.action for x in first] == ["noted"] and mm.sources.weight("nginx", LLM) == 1.0
    second = mm.sources.observe(event(0.4, correcting=""))
    assert [x.action for x in second] == ["punished"]
    assert mm.sources.weight("nginx", LLM) < 1.0


def test_sources_window_is_the_domains_last_8_events(mm):
    mm.sources.observe(event(0.4, correcting=""))
    for i in range(6):
        mm.sources.observe(event(0.4, source=f"web:site{i}.org", correcting=""))
    # the window of 8 holds the earlier failure and this one: punished
    assert mm.sources.observe(event(0.4, correcting=""))[0].action == "punished"
    for i in range(7):
        mm.sources.observe(event(0.4, source=f"web:other{i}.org", correcting=""))
    w = mm.sources.weight("nginx", LLM)
    # the last failure is now 8 events back, out of the window: a new one is only noted
    assert mm.sources.observe(event(0.4, correcting=""))[0].action == "noted"
    assert mm.sources.weight("nginx", LLM) == w
    assert mm.sources.weight("other", LLM) == 1.0


@pytest.mark.parametrize(
    ("s", "wrong", "right"),
    [(0.2, "ignored", "unrewarded"), (0.29, "noted", "unrewarded"), (0.30, "noted", "rewarded")],
)
def test_sources_ignore_below_025_and_reward_from_030(mm, s, wrong, right):
    d = mm.sources.observe(event(s))
    assert [x.action for x in d] == [wrong, right]
    assert mm.sources.weight("nginx", CORPUS) == (1.0 if right == "unrewarded" else d[1].after)


def test_source_weights_stay_in_0_2_and_rank_sources(mm):
    for _ in range(200):
        mm.sources.observe(event(1.0))
    w_llm, w_corpus = mm.sources.weight("nginx", LLM), mm.sources.weight("nginx", CORPUS)
    assert 0.0 <= w_llm < 0.01 and 1.99 < w_corpus <= 2.0
    assert [s for s, _ in mm.sources.rank("nginx", [LLM, "web:x.org", CORPUS])] == [
        CORPUS,
        "web:x.org",
        LLM,
    ]


# ------------------------------------------------------------------ debts


def test_debt_resolves_at_070_keeps_provenance_and_reopens(mm, clock):
    test = DiscriminatingTest(kind="read_local", question="which nginx version fixed it", path="x")
    debt = mm.debts.open(
        pattern="llm vs corpus",
        hypotheses=("1.99.9", "1.25.3"),
        domain="nginx",
        fragility=0.8,
        test=test,
    )
    ev = lambda c, h=1: DebtEvidence(source=CORPUS, confidence=c, supports=h, time=clock.t)  # noqa: E731
    assert mm.debts.attach(debt.id, ev(0.4)).status == "open"
    assert mm.debts.attach(debt.id, ev(0.29)).status == "open"  # 0.69
    assert mm.debts.attach(debt.id, ev(0.3, 0)).status == "open"  # other hypothesis: 0.3
    done = mm.debts.attach(debt.id, ev(0.01))  # 0.70
    assert done.status == "resolved" and done.verdict == 1 and len(done.evidence) == 4
    with pytest.raises(DebtStateError):
        mm.debts.reopen(
            mm.debts.open(pattern="p", hypotheses=("a", "b"), domain="d", fragility=0.1).id
        )
    again = mm.debts.reopen(debt.id, "new contradicting evidence")
    assert again.status == "open" and len(again.evidence) == 4  # provenance kept, not counted
    assert mm.debts.attach(debt.id, ev(0.5)).status == "open"
    assert mm.counters()["debts.reopened"] == 1 and mm.counters()["debts.resolved"] == 1


def test_debt_priority_formula_and_gaps(mm, clock):
    tested = mm.debts.open(
        pattern="p",
        hypotheses=("a", "b"),
        domain="d",
        fragility=0.6,
        test=DiscriminatingTest(kind="question", question="is it a or b?"),
    )
    untested = mm.debts.open(pattern="q", hypotheses=("c", "d"), domain="d", fragility=0.9)
    now = tested.opened + 3.5 * DAY
    a = min(1.0, (now - tested.opened) / (7 * DAY))
    assert base_priority(tested, now) == pytest.approx(0.50 * 0.6 + 0.30 * 1.0 + 0.20 * a)
    assert base_priority(untested, now) == pytest.approx(
        0.50 * 0.9 + 0.30 * 0.15 + 0.20 * min(1.0, (now - untested.opened) / (7 * DAY))
    )
    failed = mm.debts.fail_attempt(tested.id)
    assert base_priority(failed, now) == pytest.approx(base_priority(tested, now) / 1.5)
    gaps = mm.debts.gaps(now=now)
    assert [g.type for g in gaps] == ["debt", "debt"]
    assert gaps[0].detail == f"debt:{untested.id}" and gaps[1].question == "is it a or b?"


# ------------------------------------------------------------------ wisdom


def episode(mm, ev):
    """Record ``ev`` in the surprise log, then offer it to wisdom as an episode."""
    return mm.wisdom.observe(mm.surprises.record(ev))


def _resolved_debt(mm, clock, domain="nginx"):
    d = mm.debts.open(pattern="p", hypotheses=("a", "b"), domain=domain, fragility=0.5)
    return mm.debts.attach(
        d.id, DebtEvidence(source=CORPUS, confidence=0.8, supports=0, time=clock.t)
    )


def test_wisdom_promotion_needs_every_gate_and_a_resolved_debt(mm, clock):
    for i in range(3):
        episode(mm, event(0.9, session="s1" if i else "s0"))
    rec = mm.wisdom.find("nginx", "recall")
    debt = _resolved_debt(mm, clock)
    with pytest.raises(GateNotMetError, match="episode"):
        mm.wisdom.promote(rec.id, [debt.id])
    rec = episode(mm, event(0.9, session="s1"))
    with pytest.raises(GateNotMetError, match="cites 0"):
        mm.wisdom.promote(rec.id, [])
    open_debt = mm.debts.open(pattern="p", hypotheses=("a", "b"), domain="nginx", fragility=0.5)
    with pytest.raises(GateNotMetError):
        mm.wisdom.promote(rec.id, [open_debt.id])
    with pytest.raises(IllegalTransitionError):
        mm.wisdom.trust(rec.id)  # skipping provisional
    up = mm.wisdom.promote(rec.id, [debt.id])
    assert up.state == "provisional" and up.cited_debts == (debt.id,)
    mm.reopen_debt(debt.id, "contradicted")
    assert mm.wisdom.get(rec.id).state == "demoted"


def test_wisdom_low_magnitudes_or_one_session_never_promote(mm, clock):
    debt = _resolved_debt(mm, clock)
    for i in range(6):
        episode(mm, event(0.5, session=f"s{i}", domain="low"))
        episode(mm, event(1.0, session="only", domain="one"))
    for dom in ("low", "one"):
        with pytest.raises(GateNotMetError, match=r"score|session"):
            mm.wisdom.promote(mm.wisdom.find(dom, "recall").id, [debt.id])


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("episode"), st.floats(0.0, 1.0), st.sampled_from(["s0", "s1", "s2"])),
        st.tuples(
            st.just("to"),
            st.sampled_from(["candidate", "provisional", "trusted", "demoted", "bogus"]),
            st.booleans(),
        ),
        st.tuples(st.just("contradict")),
        st.tuples(st.just("reopen")),
        st.tuples(st.just("resolve")),
    ),
    max_size=25,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_wisdom_state_machine_property(tmp_path_factory, ops):
    clock = Clock()
    with Store.open(tmp_path_factory.mktemp("w") / "s", code_dim=64) as s:
        mm = MetaMemory(HolographicMemory(s, clock=clock), clock=clock)
        debt = _resolved_debt(mm, clock)
        rec = episode(mm, event(0.9))
        for op in ops:
            before = mm.wisdom.get(rec.id)
            if op[0] == "episode":
                rec = episode(mm, event(op[1], session=op[2]))
            elif op[0] == "contradict":
                rec = mm.wisdom.contradict(rec.id, "test")
            elif op[0] == "reopen":
                d = mm.debts.get(debt.id)
                if d.status == "resolved":
                    mm.reopen_debt(debt.id, "test")
            elif op[0] == "resolve":
                if mm.debts.get(debt.id).status == "open":
                    debt = mm.debts.attach(
                        debt.id,
                        DebtEvidence(source=CORPUS, confidence=0.9, supports=0, time=clock.t),
                    )
            else:
                target, cite = op[1], op[2]
                try:
                    rec = mm.wisdom.transition(
                        rec.id, target, cited_debts=[debt.id] if cite else []
                    )
                except IllegalTransitionError:
                    assert mm.wisdom.get(rec.id) == before  # nothing changed
                else:
                    assert (before.state, target) in TRANSITIONS
            rec = mm.wisdom.get(rec.id)
        for step in rec.history:
            assert (step.source, step.target) in TRANSITIONS
        # every promotion cited a debt that was resolved at the time
        for r in mm.wisdom.records():
            if r.state in ("provisional", "trusted"):
                assert r.cited_debts and all(
                    mm.debts.get(d).status == "resolved" for d in r.cited_debts
                )


def test_observe_promotes_when_every_gate_holds(mm, memory, clock):
    debt = _resolved_debt(mm, clock)
    states = [mm.observe(event(0.9, session=f"s{i % 2}")).wisdom.state for i in range(6)]
    assert states[:3] == ["candidate"] * 3 and states[3] == "provisional"
    assert states[5] == "trusted"
    assert mm.wisdom.find("nginx", "recall").cited_debts == (debt.id,)


# ------------------------------------------------------------------ scorer


def _outcomes(seed, n=64):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        f = rng.random(len(FACTOR_NAMES))
        label = bool(f[0] > 0.5)  # success follows relevance
        out.append(
            JudgedOutcome(
                features=tuple(float(x) for x in f), label=label, time=T0 - rng.random() * 30 * DAY
            )
        )
    return out


def test_scorer_snapshots_replay_to_identical_weights(store):
    model = ScorerModel.load(store)
    batches = [_outcomes(i) for i in range(5)]
    for b in batches:
        model.train(store, b, T0)
    with store.read() as txn:
        snaps = list(SNAPSHOTS.iter(txn))
    assert [s.model_version for s in snaps] == [1, 2, 3, 4, 5]
    again = replay(snaps, batches)  # re-trained from zero: every snapshot reproduced
    from_store = replay(snaps, batches_of(snaps))  # the batches the snapshots recorded
    assert from_store.delta.tobytes() == model.delta.tobytes()
    assert again.delta.tobytes() == model.delta.tobytes()
    assert ScorerModel.load(store).weights.tobytes() == model.weights.tobytes()
    assert np.all(np.abs(model.delta) <= 0.5)
    with pytest.raises(ReplayError):
        replay(snaps, [batches[0], batches[2], *batches[2:]])
    with pytest.raises(ReplayError):
        replay(snaps[1:])


def test_a_store_trained_against_an_earlier_baseline_still_loads_and_replays(store):
    from sentient_core.metamemory.factors import BASELINE_VERSION, BASELINES

    old = ScorerModel(baseline_version=1)
    batches = [_outcomes(40 + i) for i in range(2)]
    for b in batches:
        old.train(store, b, T0)
    loaded = ScorerModel.load(store)  # today's code, version-1 snapshots
    assert loaded.baseline_version == 1 and BASELINE_VERSION > 1
    assert tuple(loaded.baseline) == BASELINES[1] != BASELINES[BASELINE_VERSION]
    assert loaded.weights.tobytes() == old.weights.tobytes()
    with store.read() as txn:
        snaps = list(SNAPSHOTS.iter(txn))
    assert replay(snaps, batches_of(snaps)).delta.tobytes() == old.delta.tobytes()
    with pytest.raises(ArgumentError, match="baseline version"):
        ScorerModel(baseline_version=99)


def test_scorer_learns_the_factor_that_predicts_success_and_vetoes_win(store):
    model = ScorerModel.load(store)
    col = FACTOR_NAMES.index("relevance")
    w0 = model.weights[col]
    for i in range(20):
        model.train(store, _outcomes(100 + i), T0)
    assert model.weights[col] > w0
    assert model.counters()["batches"] == 20 and math.isfinite(model.counters()["last_loss"])


def test_factor_matrix_vetoes_retired_and_superseded(memory):
    a = memory.store("alpha beta gamma")
    b = memory.store("delta epsilon zeta")
    ctx = FactorContext(now=T0, relevance={a.id: 0.9, b.id: 0.9}, superseded=frozenset({b.id}))
    feats, veto = factor_matrix([a, b], ctx)
    assert veto.tolist() == [False, True]
    assert np.all(np.isfinite(feats)) and np.all(np.abs(feats) <= 1.0)


# ------------------------------------------------------------------ the store


def test_export_import_carries_every_metamemory_record(mm, memory, store, clock, tmp_path):
    from sentient_core.store.transfer import export_lines, import_lines

    wrong = memory.store("git 9.9 fixed it").id
    right = memory.store("git 2.39 fixed it").id
    for i in range(4):
        mm.observe(event(1.0, wrong=wrong, right=right, session=f"s{i % 2}"))
    _resolved_debt(mm, clock)
    mm.train_scorer(_outcomes(1), T0)
    assert check_integrity(store).ok
    lines = list(export_lines(store))
    with Store.open(tmp_path / "copy", code_dim=256) as other:
        import_lines(other, lines)
        assert check_integrity(other).ok
        mm2 = MetaMemory(HolographicMemory(other, clock=clock), clock=clock)
        assert len(mm2.surprises.events()) == 4
        assert mm2.sources.weights("nginx") == mm.sources.weights("nginx")
        assert mm2.credit.state(wrong) == mm.credit.state(wrong)
        assert [d.status for d in mm2.debts.debts()] == ["resolved"]
        assert mm2.scorer.weights.tobytes() == mm.scorer.weights.tobytes()
        assert mm2.wisdom.find("nginx", "recall") == mm.wisdom.find("nginx", "recall")


def test_integrity_reports_a_floor_record_naming_a_missing_trace(mm, memory, store, clock):
    from sentient_core.metamemory.credit import FLOORS, FloorRecord

    t = memory.store("openssl 9 fixed it").id
    store.write(
        lambda txn: FLOORS.put(
            txn, FloorRecord(trace=t, superseded_by=999, reason="test", strength=0.05, time=T0)
        )
    )
    report = check_integrity(store)
    assert not report.ok and any("missing trace 999" in p for p in report.problems)
