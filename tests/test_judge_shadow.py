"""A judge that can run in shadow (issue 23, item 6): it judges every outcome beside the live
judge, its verdicts are logged and counted, and nothing acts on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.autonomy.judge import Judge, JudgeSettings
from sentient_core.cli import main
from sentient_core.cli.meta_cmds import store_counts
from sentient_core.config import ConfigError, load
from sentient_core.core import Core
from sentient_core.events import EventBus, JudgeEvent, QueryEvent, ShadowJudgeEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.liveview import render
from sentient_core.vocab import IterationOutcome

DEBIAN = Path(__file__).resolve().parents[1] / "bench" / "data" / "debian"
CORPUS = DEBIAN / "corpus"

GROUNDED = dict(
    request_type="question",
    ok=True,
    request_id="r1",
    grounded=True,
    source_kinds=("local",),
    integrated_chunks=1,
    content_chars=400,
    relevance=0.55,
    margin=0.25,
    question="Which version of the Debian curl package fixed CVE-2024-11053?",
    answer="curl (7.88.1-10+deb12u10) bookworm; urgency=medium * Import patch for"
    " CVE-2024-11053: netrc and redirect credential leak, from the upstream release.",
)


def test_settings_build_a_live_judge_or_the_default_one_with_a_shadow():
    live = JudgeSettings(relevant=0.6).build(None)
    assert live.shadow is None and live.relevant == 0.6
    shadowed = JudgeSettings(mode="shadow", relevant=0.6, decisive=0.2).build(None)
    assert shadowed.relevant == 0.5 and shadowed.decisive == 0.3  # the default drives
    assert shadowed.shadow is not None and shadowed.shadow.relevant == 0.6
    assert shadowed.shadow.decisive == 0.2


def test_a_shadow_verdict_is_logged_beside_the_live_one_and_counted(tmp_path):
    with Core(tmp_path / "data", durable=False) as core:
        bus = EventBus(core.store)
        seen: list[object] = []
        bus.subscribe(seen.append)
        judge = JudgeSettings(mode="shadow", decisive=0.2).build(None)
        o = IterationOutcome(**GROUNDED)
        live = judge.judge(o, bus.emitter(session="s"))
        # Margin 0.25: not decisive for the live judge (0.3), decisive for the shadow (0.2).
        assert live.outcome == "could_not_verify" and live.gate == "decisive"
        (shadow,) = [e for e in seen if isinstance(e, ShadowJudgeEvent)]
        assert (shadow.id, shadow.outcome, shadow.gate) == ("r1", "success", "learned")
        assert shadow.live == "could_not_verify" and not shadow.agrees
        assert judge.counters()["shadow"] == {"agreed": 0, "disagreed": 1}
        assert judge.outcomes["could_not_verify"] == 1 and judge.outcomes["success"] == 0
        assert "disagrees (live: could_not_verify)" in (render(shadow) or "")
        judge.judge(IterationOutcome(**{**GROUNDED, "margin": 0.5}), bus.emitter(session="s"))
        assert judge.counters()["shadow"] == {"agreed": 1, "disagreed": 1}
    assert Judge().counters().get("shadow") is None


def _session(data: Path, judge: JudgeSettings) -> tuple[list[tuple[str, str, str]], dict, int, int]:
    """(query, live outcome, gate) per judged request; meta-memory's counts; traces;
    shadow verdicts logged."""
    with Core(data, durable=False) as core:
        learner = build_learner(
            core,
            LearnerSettings(
                learner=LearnerConfig(interval_s=0, session="shadow", max_iterations=100),
                caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
                corpus_dirs=(str(CORPUS),),
                include_python_docs=False,
                judge=judge,
            ),
            env={},
        )
        with learner:
            learner.ask("Which version of the Debian curl package fixed CVE-2024-11053?")
            learner.ask(
                "On which date was version 7.88.1-10+deb12u12 of the Debian curl package uploaded?"
            )
            learner.run(8)
        events = [e for _, e in read_events(core.store)]
        asked = {e.id: e.question or e.path or e.url for e in events if isinstance(e, QueryEvent)}
        live = [
            (asked.get(e.id, ""), e.outcome, e.gate) for e in events if isinstance(e, JudgeEvent)
        ]
        shadows = sum(isinstance(e, ShadowJudgeEvent) for e in events)
        counts = store_counts(core.store)
        # The scorer's loss reads each trace's age (wall-clock): its outcomes are compared.
        counts["scorer"].pop("last_loss", None)
        return live, counts, core.memory.count, shadows


@pytest.mark.parametrize("shadow", [JudgeSettings(mode="shadow", relevant=1.0, decisive=1.5)])
def test_in_shadow_nothing_acts_on_the_shadow_verdicts(tmp_path, shadow):
    # A shadow that disagrees with nearly everything (it wants relevance 1.0 and a margin
    # of 1.5) leaves the session exactly as without it: the same live verdicts, traces,
    # credit, sources, debts, wisdom and scorer records.
    plain_live, plain_meta, plain_traces, none = _session(tmp_path / "plain", JudgeSettings())
    live, meta, traces, shadows = _session(tmp_path / "shadowed", shadow)
    assert none == 0 and shadows == len(live) > 0
    assert live == plain_live
    assert (meta, traces) == (plain_meta, plain_traces)


def test_the_mode_comes_from_the_config_and_the_flag(tmp_path, capsys):
    toml = tmp_path / "sentient.toml"
    toml.write_text('[judge]\nmode = "shadow"\nrelevant = 0.7\n')
    settings = load(path=toml, env={}).learner_settings(tmp_path / "data", "s")
    assert settings.judge == JudgeSettings(mode="shadow", relevant=0.7)
    toml.write_text('[judge]\nmode = "loud"\n')
    with pytest.raises(ConfigError, match=r"judge\.mode"):
        load(path=toml, env={})
    code = main(
        [
            "evaluate",
            str(DEBIAN / "qa.json"),
            "--corpus",
            str(CORPUS),
            "--mode",
            "learn",
            "--sample",
            "6",
            "--judge-mode",
            "shadow",
            "--judge-decisive",
            "0.1",
            "--json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    (learn,) = report["modes"]
    shadow = learn["judge"]["shadow"]
    assert shadow["judged"] >= 6 and 0.0 <= shadow["agreement"] <= 1.0
    assert sum(shadow["pairs"].values()) == shadow["judged"]
    assert (
        main(
            ["evaluate", str(DEBIAN / "qa.json"), "--corpus", str(CORPUS), "--judge-relevant", "2"]
        )
        == 2
    )
