"""The shipped benchmark package: missing peers are reported, never silently dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sentient_core.benchmarks import peers, runner
from sentient_core.benchmarks.cases import MODULES, Case, module

ROOT = Path(__file__).resolve().parent.parent

# Runs the CLI with the named peers made unimportable: a meta-path finder that
# raises ModuleNotFoundError for them, exactly what a missing package raises.
_BLOCKED_CLI = """
import sys

BLOCKED = set(sys.argv[1].split(","))


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker())
from sentient_core.cli import main

sys.exit(main(sys.argv[2:]))
"""


def _bench_without(blocked: str, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _BLOCKED_CLI,
            blocked,
            "bench",
            "--scale",
            "0.002",
            "--repeat",
            "1",
            *args,
        ],
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    return out


def _case(kernel: str, peer_name: str, missing: str | None = None, size: str = "n") -> Case:
    return Case(
        kernel=kernel,
        size=size,
        ours=lambda: None,
        peer=None if missing else (lambda: None),
        peer_name=peer_name,
        target_met=lambda o, p: True,
        peer_missing=missing,
    )


def test_every_registered_module_exists_and_has_cases():
    assert len(set(MODULES)) == len(MODULES)
    for domain in MODULES:
        assert callable(module(domain).cases), domain


def test_plan_skips_missing_peers_but_keeps_every_kernel_timed():
    cases = [
        _case("a.x", "faiss IndexFlatIP", "faiss"),
        _case("a.x", "numpy"),
        _case("b.y", "river LR", "river"),
        _case("b.y", "sklearn SGD", "sklearn"),
    ]
    timed, skipped = runner.plan(cases)
    assert [(c.kernel, c.peer_name) for c in skipped] == [
        ("a.x", "faiss IndexFlatIP"),
        ("b.y", "river LR"),
        ("b.y", "sklearn SGD"),
    ]
    # a.x keeps its numpy row; b.y has no peer left, so ours is timed alone (no verdict).
    assert [(c.kernel, c.peer_name) for c in timed] == [
        ("a.x", "numpy"),
        ("b.y", "river not installed"),
    ]
    assert timed[1].peer is None and timed[1].target_met is None


def test_unknown_peer_is_a_clear_error():
    import pytest

    from sentient_core.errors import NotFoundError

    with pytest.raises(NotFoundError, match="unknown benchmark peer"):
        peers.load("no-such-peer")


@pytest.mark.slow
def test_missing_peers_are_listed_before_the_table_with_the_install_command():
    out = _bench_without("faiss,river,sklearn", "--only", "scorer")
    text = out.stdout
    print(text)
    note, table = text.split("\n\n", 1)
    assert note.startswith("missing benchmark peers")
    assert "river: 1 row\n" in note
    assert "scorer.sgd_batch [0.002M samples × 20 factors] vs river LogisticRegression" in note
    assert "sklearn (scikit-learn): 1 row\n" in note
    assert "faiss (faiss-cpu): no selected row needs it" in note
    assert "pip install 'sentient-core[bench]'  # faiss, river, sklearn" in note
    # Ours is still timed for the scorer: one row, peer marked as not installed.
    rows = [line for line in table.splitlines() if line.startswith("scorer.sgd_batch")]
    assert len(rows) == 1 and "river not installed" in rows[0]


@pytest.mark.slow
def test_missing_peers_are_in_the_json_and_the_other_rows_still_run():
    out = _bench_without("faiss", "--only", "topk_cosine_batch", "--json")
    report = json.loads(out.stdout)
    missing = {m["peer"]: m for m in report["missing_peers"]}
    assert set(missing) >= {"faiss"}
    faiss = missing["faiss"]
    assert faiss["package"] == "faiss-cpu"
    assert faiss["install"] == "pip install 'sentient-core[bench]'"
    assert faiss["error"].startswith("ModuleNotFoundError")
    assert [(r["kernel"], r["peer"]) for r in faiss["rows"]] == [
        ("holographic.topk_cosine_batch[normalized]", "faiss IndexFlatIP")
    ]
    assert [(r["kernel"], r["peer"]) for r in report["results"]] == [
        ("holographic.topk_cosine_batch[normalized]", "numpy Q@codes.T + argpartition")
    ]
    assert report["results"][0]["ratio"] > 0 and report["results"][0]["peer_missing"] is None


def test_measure_alternates_the_first_side_and_settles_only_rows_that_ask(monkeypatch):
    from dataclasses import replace

    calls: list[str] = []
    sleeps: list[float] = []
    monkeypatch.setattr(runner.time, "sleep", sleeps.append)
    case = replace(
        _case("single.x", "bare"),
        ours=lambda: calls.append("o"),
        peer=lambda: calls.append("p"),
        settle=False,
    )
    result = runner.measure(case, repeat=4, settle=0.5)
    # One warm-up call each, then rounds that swap which side goes first.
    assert calls == ["o", "p", "o", "p", "p", "o", "o", "p", "p", "o"]
    assert sleeps == [] and result.peer_s is not None
    runner.measure(replace(case, settle=True), repeat=2, settle=0.5)
    assert sleeps == [0.5] * 4


def test_single_call_rows_agree_with_their_bare_kernels_and_are_timed_without_sleeps():
    from sentient_core.benchmarks import cases_single

    rows = cases_single.cases(0.01)
    assert {c.kernel for c in rows} >= {
        "single.sedenion.mul",
        "single.sedenion.mul[out]",
        "single.smf.update[out]",
        "single.smf.entropy",
        "single.smf.similarity[out]",
    }
    for case in rows:
        assert case.settle is False and case.repeat == cases_single.REPEAT
        result = runner.measure(case, repeat=3)  # runs case.check: same answers
        assert result.ours_s > 0 and result.peer_s is not None and result.peer_s > 0
