"""Wisdom that acts, and self-correction both ways, in the real loop (issue 24 items 1, 2):
``evaluate --scenario wisdom`` — a loopback model lies about curl in two sessions, the
offline corpus holds the truth. Trusted wisdom from those sessions keeps a later session
from asking the model about openssl (where it lies too); the same wisdom, wrong about tiff
(which only the model knows), is demoted by its failed uses; a corrected changelog
reopens a resolved debt the wisdom cites, demotes the wisdom and the new value wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentient_core.evaluation.wisdom_scenario import run_wisdom_scenario

DEBIAN = Path(__file__).resolve().parent.parent / "bench" / "data" / "debian"


@pytest.fixture(scope="module")
def report():
    return run_wisdom_scenario(DEBIAN / "qa.json", DEBIAN / "corpus")


def test_trusted_wisdom_from_earlier_sessions_changes_a_later_sessions_choices(report):
    assert report.wisdom_after_history == "trusted"
    assert report.wisdom_history[:2] == [
        "candidate → provisional: gates met",
        "provisional → trusted: gates met",
    ]
    on, off = report.with_wisdom, report.without_wisdom
    # The prior keeps the model out of a domain it was never asked about ...
    assert on.uses.get("prior", 0) > 0 and off.uses == {}
    assert on.model_asked == 0 and on.lies_caught == 0
    # ... which the ablation pays for: model calls and lies caught by the corpus.
    assert off.model_asked > 0 and off.lies_caught > 0
    assert off.model_weight_after < 0.5 < on.model_weight_after
    assert on.answer_at_1 >= off.answer_at_1
    assert report.wisdom_after_later == "trusted"


def test_wrong_wisdom_is_demoted_by_the_outcomes_of_its_uses_and_answers_recover(report):
    w = report.wrong
    assert 0 < w.demoted_at < w.questions
    assert "contradicted by outcomes" in w.reason and w.failed_uses >= 2
    assert report.wisdom_history[2].startswith("trusted → demoted: contradicted by outcomes")
    # While the wisdom stood the model was not asked; after, it was, and memory answers.
    assert w.model_asked_before == 0 < w.model_asked_after
    assert w.answer_at_1_before < w.answer_at_1_after == 1.0


def test_a_corrected_source_reopens_a_resolved_debt_demotes_its_wisdom_and_answers_recover(
    report,
):
    c = report.correction
    assert c.wisdom_cited_it and c.debt_reopened
    assert c.wisdom_after == "demoted" and c.wisdom_reason == f"cited debt {c.debt} reopened"
    assert c.debt_status_after == "resolved" and c.debt_verdict_after == c.new_value
    assert c.answer_at_1_old_before and c.answer_at_1_new_after


def test_the_cli_runs_the_scenario(capsys):
    from sentient_core.cli import main

    assert main(["evaluate", "--scenario", "wisdom", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["with_wisdom"]["model_asked"] < out["without_wisdom"]["model_asked"]
    assert out["correction"]["debt_reopened"] is True
