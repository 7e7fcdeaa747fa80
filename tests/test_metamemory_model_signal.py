"""A configured model may add a disagreement signal the deterministic detector misses,
never remove one: ModelDisagreement on its own (a stub model), then through the real
parts (Core, build_learner, the loopback OpenAI-compatible server, a corpus folder)."""

from __future__ import annotations

import json

import pytest

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.core import Core
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMConfig
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.metamemory import MetaMemory
from sentient_core.metamemory.disagreement import detect_disagreement
from sentient_core.metamemory.model_check import MODEL_SIGNAL, ModelDisagreement
from tests.servers.openai import OpenAIServer

Q = "What is the default port of the quokka server?"
LIE = "The quokka server listens on port eighty by default."
TRUTH = "Quokka server\n\nThe quokka server listens on port 8080 by default on every platform."


class _Reply:
    def __init__(self, text):
        self.text = text


class _Stub:
    def __init__(self, reply):
        self.reply, self.calls = reply, 0

    def chat_json(self, messages, **kw):
        self.calls += 1
        if isinstance(self.reply, Exception):
            raise self.reply
        return _Reply(self.reply)


def _json(conflict, mine="", theirs=""):
    return json.dumps({"conflict": conflict, "memory_value": mine, "evidence_value": theirs})


@pytest.mark.parametrize(
    ("reply", "added", "counter"),
    [
        (_json(True, "eighty", "8080"), True, "conflicts"),
        (_json(False), False, "agreements"),
        (_json(True, "ninety", "8080"), False, "garbage"),  # not memory's own words
        (_json(True, "eighty", "eighty"), False, "garbage"),
        ("not json", False, "garbage"),
        ('{"verdict": "supported"}', False, "garbage"),
        (OSError("connection refused"), False, "errors"),
    ],
)
def test_the_model_adds_a_signal_only_with_values_from_both_passages(reply, added, counter):
    assert detect_disagreement(Q, LIE, TRUTH) is None  # the detector sees no values to compare
    check = ModelDisagreement(_Stub(reply))
    found = check.check(Q, LIE, TRUTH)
    assert (found is not None) is added
    if found is not None:
        assert found.kind == "model" and found.magnitude == MODEL_SIGNAL
        assert (found.expected, found.actual) == ("eighty", "8080")
        assert found.basis().rule == "disagreement.model"
    assert check.counters()[counter] == 1


def _learn(tmp_path, structured):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "quokka.md").write_text(TRUTH)
    with OpenAIServer({Q: LIE}, structured=structured) as llm, Core(tmp_path / "d") as core:
        learner = build_learner(
            core,
            LearnerSettings(
                learner=LearnerConfig(interval_s=0, session="m", max_iterations=10),
                llm=LLMConfig(base_url=llm.base_url, max_retries=1, backoff_s=0.01, timeout_s=5),
                caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
                corpus_dirs=(str(corpus),),
                include_python_docs=False,
            ),
            env={},
        )
        try:
            learner.ask(Q)
            learner.step()
            counters = learner.meta.model_check.counters()
        finally:
            learner.close()
        mm = MetaMemory(core.memory)
        return mm.surprises.events(), mm.debts.debts(), counters


def test_through_the_loop_the_models_signal_becomes_a_surprise_and_a_debt(tmp_path):
    events, debts, counters = _learn(
        tmp_path,
        {"verdict": '{"verdict": "supported"}', "disagreement": _json(True, "eighty", "8080")},
    )
    assert counters["calls"] == 1 and counters["conflicts"] == 1
    assert [(e.cause, e.basis.rule, e.magnitude) for e in events] == [
        ("ungrounded_contradicted", "disagreement.model", MODEL_SIGNAL)
    ]
    assert [d.hypotheses for d in debts] == [("eighty", "8080")]


def test_through_the_loop_a_model_that_sees_no_conflict_adds_nothing(tmp_path):
    events, debts, counters = _learn(
        tmp_path, {"verdict": '{"verdict": "supported"}', "disagreement": _json(False)}
    )
    assert counters["calls"] == 1 and counters["agreements"] == 1
    assert events == [] and debts == []


def test_the_model_is_never_asked_to_confirm_a_strong_disagreement():
    from types import SimpleNamespace

    from sentient_core.metamemory.loop import LoopMeta

    q = "Which version of the Debian curl package fixed CVE-2025-0167?"
    memory = "curl (7.88.1-10+deb12u18) bookworm-security; urgency=medium\n  * Fix CVE-2025-0167"
    evidence = "curl (7.88.1-10+deb12u11) bookworm-security; urgency=medium\n  * Fix CVE-2025-0167"
    stub = _Stub(_json(False))  # a model that would say "no conflict"
    me = SimpleNamespace(
        chaperone=SimpleNamespace(term_stats=lambda: None),
        model_check=ModelDisagreement(stub),
        _model_asks=0,
    )
    found = LoopMeta._disagreement(me, q, memory, evidence)
    assert found is not None and found.strong and found.kind == "version"
    assert stub.calls == 0  # the detector's signal stands; the model cannot remove it
    # Where the detector has nothing, the model is asked, once per observation.
    assert LoopMeta._disagreement(me, Q, LIE, TRUTH) is None and stub.calls == 1
    assert LoopMeta._disagreement(me, Q, LIE, TRUTH) is None and stub.calls == 1
