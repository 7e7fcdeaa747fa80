"""The field steers what is learned (learning/field_gaps.py): an SMF-axis gap is mapped onto
the corpus topics whose passage loads the starved axis, measured against the old mapping."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sentient_core.core import Core
from sentient_core.evaluation.field_ab import format_field_gaps, run_field_gaps
from sentient_core.keyphrases import question_about
from sentient_core.learning.chaperone import CorpusTopic
from sentient_core.learning.curiosity import Curiosity, CuriosityConfig
from sentient_core.learning.field_gaps import FieldGaps, passage_pulls
from sentient_core.observer import Observer
from sentient_kernels.smf import AXES

CORPUS = Path(__file__).resolve().parents[1] / "bench" / "data" / "pydoc" / "corpus"


def _topics() -> tuple[CorpusTopic, ...]:
    files = sorted(CORPUS.glob("*.txt"))[:40]
    return tuple(
        CorpusTopic(f.stem.replace("-", " "), f.name, f.read_text()[:800], named=True)
        for f in files
    )


def _observer() -> Observer:
    obs = Observer()
    obs.process_text("the learner starts from its own first words")
    obs.tick(30)
    return obs


def test_passage_pulls_read_the_observer_without_changing_it():
    obs = _observer()
    before = obs.to_record()
    texts = [t.context for t in _topics()[:5]]
    pulls = passage_pulls(obs, texts)
    assert pulls.shape == (5, 16)
    assert obs.to_record() == before  # scratch copies did the work
    assert np.array_equal(pulls, passage_pulls(obs, texts))  # deterministic
    # Each passage moves the field; different passages move it differently.
    assert np.abs(pulls).max() > 0 and not np.allclose(pulls[0], pulls[1])


def test_order_puts_the_topics_loading_an_axis_first():
    obs, topics = _observer(), _topics()
    field = FieldGaps(obs)
    pulls = passage_pulls(obs, [t.context for t in topics])
    mean = pulls.mean(axis=0)
    k = AXES.index("identity")
    order = field.order(k, topics, topics)
    assert order is not None and sorted(order) == list(range(len(topics)))
    loading = [i for i in order if pulls[i, k] > mean[k] + 1e-9]
    assert 0 < len(loading) < len(topics)
    assert order[: len(loading)] == sorted(loading, key=lambda i: (-pulls[i, k], i))
    assert all(field.loads(k, topics[i], topics) for i in loading)
    assert not field.loads(k, topics[order[-1]], topics)
    # "truth" (Δ10) fires only at a phase order no single passage brings: no candidate
    # loads it, the old order is kept and the miss is counted.
    assert field.order(AXES.index("truth"), topics, topics) is None
    assert field.unloadable["truth"] == 1
    # Without steering the order is never changed.
    assert FieldGaps(obs, steer=False).order(k, topics, topics) is None


@pytest.mark.parametrize("steer", [True, False])
def test_curiosity_maps_an_axis_gap_by_the_field(tmp_path, steer):
    topics = _topics()
    with Core(tmp_path / "d") as core:
        field = FieldGaps(core.observer, steer=steer)
        cur = Curiosity(
            core.observer,
            core.memory,
            CuriosityConfig(memory_settles="none", axis_gaps=2),
            topics=lambda: topics,
            field=field,
        )
        cur.detect()
        asked = [r for r in cur.book.records() if r.gap_type == "smf_imbalance"]
        assert len(field.picks) == len(asked) == 2
        picked = {question_about(p.phrase) for p in field.picks}
        assert picked == {r.question for r in asked}
        if steer:
            assert all(p.loads for p in field.picks)
            assert all("(its passage loads the axis)" in r.reason for r in asked)
        else:
            assert not any("loads the axis" in r.reason for r in asked)


def test_a_real_offline_run_asks_about_subjects_that_load_the_starved_axis(tmp_path):
    """The A/B of ``evaluate --scenario field-gaps`` on 12 iterations per arm."""
    report = run_field_gaps(12, tmp_path)
    on, off = report.steered, report.unsteered
    assert on.mapped > 0 and off.mapped > 0
    # Every axis gap some candidate loads was mapped onto a loading subject...
    assert on.loading == on.mapped - on.unloadable
    # ...which the old mapping does only by chance.
    assert off.share_loading is not None and on.share_loading is not None
    assert off.share_loading < on.share_loading
    assert set(on.subjects) != set(off.subjects)
    assert on.entropy_after > on.entropy_before
    text = format_field_gaps(report)
    assert "share loading the axis" in text and f"{on.share_loading:.3f}" in text
