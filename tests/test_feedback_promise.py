"""Feedback keeps its promise (issue 22 item 6), through the real CLI on a real store:
one ``--wrong`` moves no rank and no score; the penalty grows with each consistent
signal; a right passage of the same file is not punished for a wrong neighbour; the
file's weight goes down only after wrong passages of it, not one."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from sentient_core.cli import main
from sentient_core.core import Core

GZIP = "local:/docs/gzip.changelog.txt"
WRONG = "The gzip package fixed the deflate overflow in version 1.19, after the rsync option."
RIGHT = "The gzip package fixed the deflate overflow in version 1.12; see the deflate notes."
OTHER = "The bzip2 package fixed the block sorter overflow in version 1.0.8 of bzip2."
ALSO_WRONG = "The gzip package fixed the deflate overflow twice, in versions 1.20 and 1.21."
QUERY = "Which version of the gzip package fixed the deflate overflow?"


def _cli(data: Path, *args: str):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--data-dir", str(data), *args, "--json"]) == 0
    return json.loads(out.getvalue())


def _scores(data: Path) -> dict[int, float]:
    rows = _cli(data, "recall", QUERY, "-k", "10", "--no-touch")
    return {r["id"]: r["score"] for r in rows}


def _order(scores: dict[int, float]) -> list[int]:
    return sorted(scores, key=lambda i: (-scores[i], i))


def _file_weights(data: Path) -> set[float]:
    return {r["weight"] for r in _cli(data, "sources") if r["source"] == GZIP}


def test_one_wrong_moves_nothing_and_the_penalty_grows(tmp_path):
    data = tmp_path / "d"
    with Core(data) as core:
        wrong, right = (core.memory.store(t, source=GZIP).id for t in (WRONG, RIGHT))
        core.memory.store(OTHER, source="local:/docs/bzip2.changelog.txt")
    before = _scores(data)
    assert set(before) >= {wrong, right}

    _cli(data, "feedback", str(wrong), "--wrong")
    one = _scores(data)
    assert _order(one) == _order(before)
    # Not one score moved (but for the clock: recency is measured at each recall).
    assert one == pytest.approx(before, abs=1e-6)
    assert _file_weights(data) <= {1.0}  # the file: not punished for one passage

    penalties = []
    for _ in range(3):
        _cli(data, "feedback", str(wrong), "--wrong")
        now = _scores(data)
        penalties.append(before[wrong] - now[wrong])
        # The right passage of the same file keeps its score: its file was not punished.
        assert now[right] == pytest.approx(before[right], abs=1e-6)
    assert 1e-3 < penalties[0] < penalties[1] < penalties[2]
    assert _file_weights(data) <= {1.0}


def test_the_file_is_punished_after_wrong_passages_of_it(tmp_path):
    data = tmp_path / "d"
    with Core(data) as core:
        first, second, right = (
            core.memory.store(t, source=GZIP).id for t in (WRONG, ALSO_WRONG, RIGHT)
        )
    before = _scores(data)
    for tid in (first, first):
        _cli(data, "feedback", str(tid), "--wrong")
    assert _file_weights(data) <= {1.0}
    _cli(data, "feedback", str(second), "--wrong")
    # A second passage of the file was wrong: the file's weight now goes down, and every
    # passage of it (the right one too) pays for the file's record.
    weights = _file_weights(data)
    assert weights and max(weights) < 1.0
    assert _scores(data)[right] < before[right]
