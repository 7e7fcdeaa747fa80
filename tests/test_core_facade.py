"""The façade: what the CLI and the server ask of a core, asked of ``Core`` directly."""

from __future__ import annotations

import pytest

from sentient_core import Core
from sentient_core.errors import NotFoundError


def test_ingest_recall_status_feedback_and_meta_reads(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tides.md").write_text(
        "# Tides\n\nTides follow the moon; spring tides come at new moon."
    )
    (docs / "bees.txt").write_text("Honey bees dance to show where flowers are.")
    with Core(tmp_path / "data") as core:
        summary = core.ingest([docs])
        assert summary.files == 2 and summary.chunks >= 2
        again = core.ingest([docs])  # idempotent, as `cli.py ingest`
        assert again.chunks == 0 and again.unchanged == 2
        status = core.status()
        assert status["traces"] == status["total"] == summary.chunks
        assert set(status["smf"]) and 0.0 <= status["coherence"] <= 1.0
        (hit, *_) = core.recall("what do the tides follow?", 3)
        assert "moon" in hit.record.text
        before = core.memory.get(hit.record.id)
        out = core.feedback(hit.record.id, right=False, note="test")
        assert out["trace"] == hit.record.id and out["verdict"] == "wrong"
        assert core.memory.get(hit.record.id).failure_count == before.failure_count + 1
        assert core.debts() == []
        # A wrong answer is noted against its source in its domain; one wrong passage
        # does not yet lower the source's weight (a second wrong passage of it would).
        (weight,) = core.sources()
        assert (weight.weight, weight.failures, weight.wrong_passages) == (
            1.0,
            1,
            (hit.record.id,),
        )
        assert core.sources(weight.domain) == [weight]
        assert core.sources("no such domain") == []
        # The surprise of a wrong answer starts a wisdom candidate about its domain.
        (candidate,) = core.wisdom()
        assert candidate.state == "candidate" and candidate.action == "recall"
        assert core.wisdom(state="trusted") == []
        with pytest.raises(NotFoundError, match="not a trace"):
            core.feedback(10_000, right=True)
