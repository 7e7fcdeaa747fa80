"""The command line: help, warm-up report and the benchmark table (smoke scale)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sentient_core.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_help_from_a_checkout():
    out = subprocess.run(
        [sys.executable, "cli.py", "--help"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "bench" in out.stdout and "warmup" in out.stdout


def test_console_script_points_at_the_same_main():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["sentient"] == "sentient_core.cli:main"


def test_warmup_reports_every_module(capsys):
    from sentient_kernels.warmup import MODULES

    assert main(["warmup", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [m["module"] for m in report["modules"]] == list(MODULES)
    assert all(m["kernels"] > 0 and m["seconds"] >= 0 for m in report["modules"])


@pytest.mark.slow
def test_bench_quick_json_covers_every_kernel_module(capsys):
    from sentient_core.benchmarks.cases import MODULES

    assert main(["bench", "--scale", "0.002", "--repeat", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    kernels = {r["kernel"].split(".")[0] for r in report["results"]}
    assert set(MODULES) <= kernels
    for r in report["results"]:
        assert r["ours_median_s"] > 0
        if r["peer_median_s"] is not None:
            assert r["ratio"] is not None and r["ratio"] > 0


@pytest.mark.slow  # ~9 s (the bench runner's peers and settling)
def test_bench_table_prints_header_and_rows(capsys):
    assert main(["bench", "--scale", "0.002", "--repeat", "1", "--only", "sedenion.mul_batch"]) == 0
    out = capsys.readouterr().out
    # The table comes last; a note on missing peers (if any) comes before it.
    lines = out.split("\n\n")[-1].splitlines()
    assert lines[0].split()[:3] == ["kernel", "size", "ours"]
    assert any(line.startswith("sedenion.mul_batch") for line in lines[2:])


def test_bench_unknown_filter_is_an_error(capsys):
    assert main(["bench", "--scale", "0.002", "--only", "no-such-kernel"]) == 2
    assert "no benchmark matches" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [["bench", "--scale", "0"], ["bench", "--scale", "2"], ["nope"]])
def test_bad_arguments_exit_with_usage(bad):
    with pytest.raises(SystemExit) as info:
        main(bad)
    assert info.value.code == 2


def test_quality_reports_both_encoders_at_both_levels(capsys):
    assert main(["quality", "--queries", "60", "--json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert {(r["encoder"], r["level"]) for r in reports} == {
        (e, lvl) for e in ("token", "char-compat") for lvl in ("chunk", "doc")
    }
    by = {(r["encoder"], r["level"]): r for r in reports}
    assert by["token", "chunk"]["recall_at_10"] > by["char-compat", "chunk"]["recall_at_10"]
