"""Bench hygiene (issue 25 item 7): ``--only`` builds only its fixtures, no temp folder is left
behind, and rows with a physical floor report how close they run to it."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sentient_core.benchmarks import cases as registry
from sentient_core.benchmarks import (
    cases_holographic,
    cases_integration,
    cases_learner,
    cases_lexical,
    cases_memory,
    floors,
    runner,
)
from sentient_core.benchmarks.cases import MODULES, Case, module


@pytest.mark.slow  # builds every module's cases at a tiny scale (~15 s)
def test_every_module_declares_exactly_the_kernels_its_cases_time():
    try:
        for domain in MODULES:
            got = {c.kernel for c in module(domain).cases(0.002)}
            assert got == set(module(domain).KERNELS), domain
    finally:
        registry.close()


def test_selected_names_only_the_modules_with_a_matching_kernel():
    assert registry.selected("sedenion.mul_batch") == ["sedenion"]
    assert registry.selected("learner.step") == ["learner"]
    assert registry.selected("memory.") == ["memory"]
    assert registry.selected("recall") == ["memory", "lexical"]
    assert registry.selected(None) == list(MODULES)
    assert registry.selected("no-such-kernel") == []


def test_only_calls_no_other_module_and_builds_no_other_fixture(monkeypatch):
    calls: list[str] = []

    def counting(name, fn):
        def wrapped(*args, **kwargs):
            calls.append(name)
            return fn(*args, **kwargs)

        return wrapped

    # Every module's factory, and the builders of the heavy fixtures (1M-trace
    # stores, the 1 GB matrix, the integration corpus) wherever they are used.
    for domain in MODULES:
        mod = module(domain)
        monkeypatch.setattr(mod, "cases", counting(f"cases:{domain}", mod.cases))
    for mod, name in (
        (cases_memory, "build_store"),
        (cases_learner, "build_store"),
        (cases_lexical, "build"),
        (cases_holographic, "_data"),
        (cases_integration, "_corpus"),
    ):
        monkeypatch.setattr(mod, name, counting(f"{mod.__name__}.{name}", getattr(mod, name)))

    report = runner.run(scale=0.002, only="sedenion.mul_batch", repeat=1)
    assert {r.case.kernel for r in report.results} == {"sedenion.mul_batch"}
    assert calls == ["cases:sedenion"]


@pytest.mark.parametrize(
    ("kernel", "prefix"),
    [
        ("learner.step[user question]", "sentient-bench-learner-"),
        ("integration.files", "sentient-bench-integration-"),
    ],
)
def test_a_bench_leaves_no_temp_folder(monkeypatch, kernel, prefix):
    made: list[Path] = []
    real = tempfile.mkdtemp

    def recording(*args, **kwargs):
        path = real(*args, **kwargs)
        if Path(path).name.startswith(prefix):
            made.append(Path(path))
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", recording)
    seen_during: list[bool] = []
    measure = runner.measure

    def measuring(case, *args, **kwargs):
        seen_during.append(all(p.is_dir() for p in made))
        return measure(case, *args, **kwargs)

    monkeypatch.setattr(runner, "measure", measuring)
    report = runner.run(scale=0.002, only=kernel, repeat=1)
    assert [r.case.kernel for r in report.results] == [kernel]
    assert len(made) == 1 and seen_during == [True]  # it existed while the case ran
    assert not made[0].exists()


def test_a_failing_run_still_removes_its_temp_fixtures(tmp_path, monkeypatch):
    folder = tmp_path / "fixture"
    folder.mkdir()

    def boom() -> None:
        raise RuntimeError("the kernel failed")

    def fake_collect(scale, only):
        registry.on_close(lambda: folder.rmdir())
        return [Case(kernel="x", size="n", ours=boom, peer=None, peer_name="none")]

    monkeypatch.setattr(runner, "collect", fake_collect)
    with pytest.raises(RuntimeError, match="the kernel failed"):
        runner.run(only="x", repeat=1)
    assert not folder.exists()


def test_stream_read_reads_every_byte():
    rng = np.random.default_rng(0)
    for size in (8 * 1000, 8 * 1000 + 5, 3):
        data = rng.integers(0, 256, size, dtype=np.uint8)
        words = data[: size - size % 8].view(np.int64)
        want = int(words.sum(dtype=np.int64)) + int(data[size - size % 8 :].sum())
        assert floors.stream_read(data)() == want
    # Any dtype and shape: the bytes of a float32 matrix.
    codes = rng.standard_normal((100, 16), dtype=np.float32)
    assert floors.stream_read(codes)() == int(codes.reshape(-1).view(np.int64).sum())


def test_copy_through_reads_both_inputs_and_writes_the_output():
    a, b, out = np.arange(6.0).reshape(2, 3), np.ones((2, 3)), np.zeros((2, 3))
    floors.copy_through((a, b), out)()
    np.testing.assert_array_equal(out, a + 1)
    with pytest.raises(ValueError, match="one shape"):
        floors.copy_through((a, b), np.zeros(3))


def _case(**kw) -> Case:
    return Case(kernel="k.x", size="n", ours=lambda: None, peer=None, peer_name="none", **kw)


def test_the_floor_is_a_third_side_timed_in_the_same_alternating_rounds(monkeypatch):
    calls: list[str] = []
    ticks = iter(range(10_000))
    # A clock that makes ours take 4 units, the peer 2 and the floor 1 per call.
    cost = {"o": 4, "p": 2, "f": 1}
    now = [0.0]

    def clock() -> float:
        next(ticks)
        return now[0]

    def side(name):
        def run():
            calls.append(name)
            now[0] += cost[name]

        return run

    monkeypatch.setattr(runner.time, "perf_counter", clock)
    case = replace(
        _case(floor=side("f"), floor_name="stream"),
        ours=side("o"),
        peer=side("p"),
        settle=False,
    )
    result = runner.measure(case, repeat=2)
    assert calls == ["o", "p", "f", "o", "p", "f", "f", "p", "o"]
    assert (result.ours_s, result.peer_s, result.floor_s) == (4, 2, 1)
    assert result.of_floor == 0.25
    assert result.as_dict()["of_floor"] == 0.25 and result.as_dict()["floor"] == "stream"
    table = runner.format_table([result])
    assert "of floor" in table.splitlines()[0]
    assert "0.25 (1 ns)" not in table  # seconds, not nanoseconds: 1 unit = 1 s
    assert "0.25 (1.00 s)" in table.splitlines()[2]
    assert table.splitlines()[-1] == "  k.x: stream"


def test_a_floor_that_is_the_peer_reuses_the_peer_timings():
    calls: list[str] = []
    peer = lambda: calls.append("p")  # noqa: E731
    case = replace(_case(floor=peer, floor_name="raw puts"), peer=peer, settle=False)
    result = runner.measure(case, repeat=3)
    assert calls.count("p") == 4  # one warm-up and three timed: not timed twice
    assert result.floor_s == result.peer_s


def test_rows_without_a_floor_report_none():
    result = runner.measure(replace(_case(), settle=False), repeat=1)
    assert result.floor_s is None and result.of_floor is None
    assert "floors:" not in runner.format_table([result])
