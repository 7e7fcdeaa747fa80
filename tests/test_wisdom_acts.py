"""Wisdom that acts and self-correction both ways (issue 24 items 1 and 2), unit level:
advice from a record's episodes, its three uses (route, prior, recall), credit only from
judged outcomes, demotion by failed uses, and a resolved debt reopened by new evidence.
The closed loop runs in tests/test_wisdom_scenario.py."""

from __future__ import annotations

import pytest

from sentient_core.events import EventBus
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.metamemory import DebtEvidence, MetaMemory, SurpriseBasis, make_event
from sentient_core.metamemory.advice import WISDOM_WEIGHT, active_advice
from sentient_core.metamemory.corrections import open_or_reopen
from sentient_core.metamemory.disagreement import Disagreement
from sentient_core.store import Store
from sentient_core.vocab import Passage, Source

T0 = 1_700_000_000.0
LLM = "llm:127.0.0.1/liar"
CORPUS = "local:/data/curl.changelog.txt"


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


@pytest.fixture
def mm(tmp_path):
    clock = Clock()
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append)
    with Store.open(tmp_path / "s", code_dim=256) as store:
        meta = MetaMemory(HolographicMemory(store, clock=clock), emit=bus.emitter(), clock=clock)
        meta.seen = seen  # type: ignore[attr-defined]
        yield meta


def _lie(mm, domain="curl", session="s1", source=LLM):
    ev = make_event(
        context=f"which {domain} version fixed it",
        action="answer",
        magnitude=0.9,
        basis=SurpriseBasis(rule="test"),
        domain=domain,
        source=source,
        cause="ungrounded_contradicted",
        time=T0,
        session=session,
        correcting_source=CORPUS,
    )
    return mm.observe(ev)


def _trusted_wisdom(mm, domain="curl"):
    debt = mm.debts.open(pattern="p", hypotheses=("a", "b"), domain=domain, fragility=0.5)
    mm.debts.attach(debt.id, DebtEvidence(source=CORPUS, confidence=0.8, supports=0, time=T0))
    for i in range(6):
        last = _lie(mm, domain, session=f"s{i % 2}")
    assert last.wisdom.state == "trusted"
    return last.wisdom, debt


def _uses(mm):
    return [
        (e.action, e.subject, e.domain)
        for e in mm.seen
        if e.kind == "metamemory" and e.action.startswith("used:")
    ]


def test_only_active_wisdom_advises_and_it_names_the_source_its_episodes_blame(mm):
    for i in range(3):
        _lie(mm, session=f"s{i}")
    with mm.advisor.store.read() as txn:
        assert active_advice(txn) == []  # a candidate advises nothing
    rec, _ = _trusted_wisdom(mm)
    with mm.advisor.store.read() as txn:
        (advice,) = active_advice(txn)
    assert (advice.wisdom, advice.avoid, advice.domain) == (rec.id, LLM, "curl")
    assert advice.weight == WISDOM_WEIGHT["trusted"]


def test_route_prior_and_recall_uses_each_publish_an_event_naming_the_record(mm):
    rec, _ = _trusted_wisdom(mm)
    advisor = mm.advisor
    advisor.begin("r1")
    # route: in curl the source's own weight is capped
    own = mm.sources.weight("curl", LLM)
    assert advisor.weight("curl", LLM) == min(own, WISDOM_WEIGHT["trusted"])
    # prior: openssl has no weight for the model yet; the trusted record sets its start
    assert mm.sources.record("openssl", LLM) is None
    assert advisor.weight("openssl", LLM) == WISDOM_WEIGHT["trusted"]
    # other sources are untouched
    assert advisor.weight("openssl", CORPUS) == 1.0
    # recall: the factor's weights of the domain, capped for the blamed source
    capped = advisor.recall_weights("openssl", {CORPUS: 1.2}, {CORPUS, LLM})
    assert capped == {CORPUS: 1.2, LLM: WISDOM_WEIGHT["trusted"]}
    kinds = _uses(mm)
    assert ("used:route", f"wisdom:{rec.id}", "curl") in kinds
    assert ("used:prior", f"wisdom:{rec.id}", "openssl") in kinds
    # once per request and record: a second read in r1 publishes nothing new
    n = len(kinds)
    advisor.weight("curl", LLM)
    assert len(_uses(mm)) == n
    # the ablation reads nothing
    advisor.enabled = False
    assert advisor.weight("openssl", LLM) == 1.0


def test_being_read_is_no_credit_only_judged_outcomes_are(mm):
    rec, _ = _trusted_wisdom(mm)
    advisor = mm.advisor
    before = mm.wisdom.get(rec.id)
    for _ in range(5):
        advisor.weight("openssl", LLM)  # read, never settled
    assert mm.wisdom.get(rec.id).support == before.support
    advisor.begin("r2")
    advisor.weight("openssl", LLM)
    advisor.settle("r2", "could_not_verify")  # neither a success nor a failure
    assert mm.wisdom.get(rec.id).uses_succeeded == 0 == mm.wisdom.get(rec.id).uses_failed
    advisor.begin("r3")
    advisor.weight("openssl", LLM)
    (after,) = advisor.settle("r3", "success")
    assert after.uses_succeeded == 1 and after.support == before.support + 1


def test_failed_uses_outnumbering_successes_demote_the_record(mm):
    rec, _ = _trusted_wisdom(mm)
    advisor = mm.advisor
    outcomes = ["success", "failure", "failure", "failure"]
    states = []
    for i, outcome in enumerate(outcomes):
        advisor.begin(f"q{i}")
        assert advisor.weight("tiff", LLM) < 0.5 or states[-1] == "demoted"
        (now,) = advisor.settle(f"q{i}", outcome) or (mm.wisdom.get(rec.id),)
        states.append(now.state)
    # One failure after a success is not enough (wrong_uses = 2); the second failure
    # outnumbers the success and demotes; a demoted record is not used (nothing settles).
    assert states == ["trusted", "trusted", "demoted", "demoted"]
    demoted = mm.wisdom.get(rec.id)
    assert "contradicted by outcomes: 2 of its last 3 use(s) failed" in demoted.history[-1].reason
    assert demoted.uses_failed == 2 and demoted.uses_succeeded == 1
    assert demoted.recent_uses == "sff"
    # a demoted record advises nothing: the model weighs 1 again where it had no weight
    advisor.begin("q9")
    assert advisor.weight("tiff", LLM) == 1.0


def _conflict(expected: str, actual: str) -> Disagreement:
    return Disagreement(
        expected=expected,
        actual=actual,
        magnitude=0.9,
        strong=True,
        explanation=f"{expected} vs {actual}",
        anchor="CVE-1",
        kind="version",
        distance=0,
    )


def test_new_evidence_against_a_resolution_reopens_the_debt_and_demotes_its_wisdom(mm):
    passage = Passage(text="fixed in 1.2", source=Source("local", "/data/curl.changelog.txt"))
    q = "Which version fixed CVE-1?"

    def conflict(expected, actual, surprise):
        return open_or_reopen(
            mm,
            question=q,
            found=_conflict(expected, actual),
            domain="curl",
            passage=passage,
            wrong_trace=-1,
            right_trace=-1,
            surprise_id=surprise,
            now=T0,
        )

    debt = conflict("1.0", "1.2", 0)
    debt = mm.debts.attach(
        debt.id, DebtEvidence(source=CORPUS, confidence=0.4, supports=1, time=T0, attempt=True)
    )
    assert debt.status == "resolved" and debt.hypotheses[debt.verdict] == "1.2"
    # Wisdom learned in curl cites the domain's resolved debts, this one among them.
    for i in range(6):
        rec = _lie(mm, "curl", session=f"s{i % 2}").wisdom
    assert rec.state == "trusted" and debt.id in rec.cited_debts
    # Evidence that agrees with the resolution opens nothing and changes nothing.
    assert conflict("1.0", "1.2", 1) is None
    assert [d.id for d in mm.debts.debts()] == [debt.id]
    assert mm.wisdom.get(rec.id).state == "trusted"
    # The source turns: it now says 1.0. The resolved debt reopens with that evidence,
    # and the wisdom citing it is demoted.
    reopened = conflict("1.2", "1.0", 2)
    assert reopened.id == debt.id and reopened.status == "open" and reopened.reopened == 1
    assert reopened.evidence[-1].supports == reopened.hypotheses.index("1.0")
    assert reopened.evidence[-1].surprise_id == 2
    assert [d.id for d in mm.debts.debts()] == [debt.id]
    demoted = mm.wisdom.get(rec.id)
    assert demoted.state == "demoted" and f"cited debt {debt.id} reopened" in (
        demoted.history[-1].reason
    )
    # Reopened, it is a debt gap again: its test re-checks what rested on it.
    assert [g.detail for g in mm.debts.gaps()] == [f"debt:{debt.id}"]


def test_a_revised_value_is_not_a_near_duplicate(tmp_path):
    from sentient_core.memory.storing import revises

    entry = (
        "curl (7.88.1-10+deb12u11) bookworm-security; urgency=medium\n"
        "  * CVE-2025-0167: netrc and default credential leak\n"
        " -- Samuel Henrique <samueloph@debian.org>  Sat, 08 Feb 2025 10:00:00 +0000\n"
    ) * 3
    fixed = entry.replace("deb12u11", "deb12u31", 1)
    assert revises(entry, fixed)
    assert not revises(entry, entry)
    assert not revises(entry, entry[40:])  # a chunk boundary moved: text cut, not replaced
    assert not revises(entry, entry.replace("netrc", "NETRC"))  # no value changed
    with Store.open(tmp_path / "m", code_dim=256) as store:
        memory = HolographicMemory(store)
        src = "local:/c.txt"
        (first,) = memory.store_unique([NewTrace(text=entry, source=src)], near=0.95)
        again, revised = memory.store_unique(
            [
                NewTrace(text=entry.replace("urgency", "urgency "), source=src),
                NewTrace(text=fixed, source=src),
            ],
            near=0.95,
        )
        assert first.new and not again.new  # a near-copy without a new value
        assert revised.new and revised.record.id != first.record.id


def test_a_resolved_debt_supersedes_the_trace_holding_the_losing_value(mm):
    from sentient_core.metamemory.corrections import settle_dependants
    from sentient_core.metamemory.credit_records import FLOORS

    lie, truth = mm.memory.store_batch(
        [
            NewTrace(text="CVE-1 was fixed in 1.0.", source=LLM),
            NewTrace(text="CVE-1 was fixed in version 1.2 of curl.", source=CORPUS),
        ]
    )
    debt = mm.debts.open(
        pattern="Which version fixed CVE-1?",
        hypotheses=("1.0", "1.2"),
        domain="curl",
        fragility=0.9,
        source_memory=lie.id,
    )
    debt = mm.debts.attach(
        debt.id,
        DebtEvidence(source=CORPUS, confidence=0.8, supports=1, trace=truth.id, time=T0),
    )
    assert debt.status == "resolved"
    lost, won = settle_dependants(mm, debt)
    assert (lost, won) == ([lie.id], [truth.id])
    gone = mm.memory.get(lie.id)
    assert gone.retired and gone.failure_count == 1 and mm.memory.get(truth.id).success_count == 1
    with mm.memory.datastore.read() as txn:
        floor = FLOORS.get(txn, lie.id)
    assert floor.superseded_by == truth.id and f"debt {debt.id} resolved on '1.2'" in floor.reason
