"""Recall spread along links (memory/spreading.py, recall(spread=), evaluate --spread)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.evaluation import evaluate, format_report
from sentient_core.memory.spreading import spread_hits

DATA = Path(__file__).resolve().parents[1] / "bench" / "data" / "pydoc"

TEXTS = [
    "Generators yield values lazily; next resumes a generator where it paused.",
    "A generator expression builds a generator without a def statement.",
    "Coroutines suspend with await and are driven by an event loop.",
    "The yield from statement delegates to a subgenerator.",
    "Lists hold items in order and grow with append.",
    "Dictionaries map hashable keys to values.",
    "Sets hold unique hashable items.",
]


def _core(path: Path) -> tuple[Core, list[int]]:
    core = Core(path)
    ids = [core.memory.store(t).id for t in TEXTS]
    return core, ids


def test_a_linked_neighbour_takes_the_last_place_never_the_first(tmp_path):
    core, ids = _core(tmp_path / "d")
    with core:
        plain = core.recall("generator yield lazily", 5, rank="hybrid")
        assert len(plain) == 5
        outside = next(i for i in ids if i not in {h.record.id for h in plain})
        # Link the best hit to a passage outside its top 5 (what reflection writes).
        core.memory.link(plain[0].record.id, outside, weight=0.9)
        spread = core.recall("generator yield lazily", 5, rank="hybrid", spread=1)
        got = [h.record.id for h in spread]
        assert got[:4] == [h.record.id for h in plain[:4]]
        assert got[4] == outside
        assert spread[4].lexical is None and spread[4].score <= plain[3].score
        # hops = 0 is plain recall; k = 1 keeps the best hit.
        assert [h.record.id for h in spread_hits(core.memory, plain, 5, 0)] == [
            h.record.id for h in plain
        ]
        assert [h.record.id for h in core.recall("generator yield", 1, spread=2)] == [
            core.recall("generator yield", 1)[0].record.id
        ]
        # Without links, spreading changes nothing.
        core.memory.unlink(plain[0].record.id, outside)
        assert [h.record.id for h in core.recall("generator yield lazily", 5, spread=2)] == [
            h.record.id for h in core.recall("generator yield lazily", 5)
        ]
        with pytest.raises(ArgumentError, match="spread hops"):
            core.recall("generator", 5, spread=4)


def test_evaluate_reports_answer_at_k_with_and_without_spreading(tmp_path):
    """Learn mode writes links (its reflections); ingest mode has none to spread along."""
    report = evaluate(DATA / "qa.json", DATA / "corpus", mode="both", sample_size=12, spread=1)
    by_mode = {m.mode: m for m in report.modes}
    ingest, learn = by_mode["ingest"].spread, by_mode["learn"].spread
    assert ingest is not None and learn is not None
    assert ingest.links == 0 and ingest.answer_at_k_spread == ingest.answer_at_k
    assert learn.links > 0 and learn.linked_traces > 0
    assert learn.answer_at_k == by_mode["learn"].answer_at_k  # the same recall, plain
    assert learn.neighbours_in_top_k > 0
    assert 0.0 <= learn.answer_at_k_spread <= 1.0
    text = format_report(report)
    assert "answer@5 spread along links" in text and "spread: link pairs in the store" in text


def test_cli_recall_spreads_along_links(tmp_path):
    import json
    import subprocess
    import sys

    core, ids = _core(tmp_path / "d")
    with core:
        plain = core.recall("generator yield lazily", 5, rank="hybrid")
        outside = next(i for i in ids if i not in {h.record.id for h in plain})
        core.memory.link(plain[0].record.id, outside, weight=0.9)
    root = Path(__file__).resolve().parents[1]

    def run(*extra: str) -> list[int]:
        out = subprocess.run(
            [
                sys.executable,
                str(root / "cli.py"),
                "recall",
                "generator yield lazily",
                "-k",
                "5",
                "--rank",
                "hybrid",
                "--no-touch",
                "--json",
                "--data-dir",
                str(tmp_path / "d"),
                *extra,
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
        )
        return [row["id"] for row in json.loads(out.stdout)]

    assert outside not in run()
    assert run("--spread", "1")[4] == outside
