"""The wheel is self-sufficient: built, installed into a fresh venv, run from outside the checkout.

Slow (a wheel build, a venv with the runtime dependencies from the registry and
a first Numba compile), but part of the default suite and so of CI. The bench
extra is deliberately not installed, so the missing-peer note is exercised.
The outputs are printed to the terminal (the log shows them even when the test
passes) and saved to ``wheel-test-output.txt`` in the test's tmp dir.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow

# Never copied into the build tree: VCS data, local venvs and every cache.
_IGNORE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "__pycache__",
    "*.nbi",
    "*.nbc",
    "build",
    "dist",
    "*.egg-info",
    ".pytest_cache",
    ".benchmarks",
    ".hypothesis",
    ".ruff_cache",
)


def _clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without anything that could point Python at the checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PYTHON") and k not in {"VIRTUAL_ENV", "NUMBA_CACHE_DIR"}
    }
    return env | extra


class _Log:
    def __init__(self, path: Path, capsys: pytest.CaptureFixture) -> None:
        self.path = path
        self.capsys = capsys
        self.timings: dict[str, float] = {}

    def write(self, text: str) -> None:
        with self.path.open("a") as f:
            f.write(text + "\n")
        with self.capsys.disabled():
            print(text, flush=True)

    def run(self, label: str, cmd: list[str], *, timeout: float, brief: bool = False, **kw) -> str:
        """Run ``cmd``, log it with its time and output; ``brief`` logs pip's last line only."""
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
        self.timings[label] = time.perf_counter() - t0
        self.write(
            f"\n=== {label}: {' '.join(map(str, cmd))} "
            f"(exit {out.returncode}, {self.timings[label]:.1f} s)"
        )
        ok = out.returncode == 0
        if brief and ok:
            self.write(out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "")
        else:
            if out.stdout.strip():
                self.write(out.stdout.rstrip())
            if out.stderr.strip():
                self.write("--- stderr ---\n" + out.stderr.rstrip())
        assert ok, f"{label} failed (exit {out.returncode})"
        return out.stdout


def _installed_files(python: Path) -> dict:
    code = (
        "import importlib.metadata as md, importlib.util, json, sys\n"
        "import sentient_kernels, sentient_core, sentient_core.benchmarks\n"
        "dist = md.distribution('sentient-core')\n"
        "print(json.dumps({\n"
        "  'files': [str(dist.locate_file(f)) for f in dist.files],\n"
        "  'modules': [sentient_kernels.__file__, sentient_core.__file__,"
        " sentient_core.benchmarks.__file__],\n"
        "  'direct_url': dist.read_text('direct_url.json'),\n"
        "  'bench': importlib.util.find_spec('bench') is not None,\n"
        "  'sys_path': sys.path,\n"
        "  'site': __import__('sysconfig').get_paths()['purelib'],\n"
        "}))\n"
    )
    return json.loads(
        subprocess.run(
            [str(python), "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=python.parent,
            env=_clean_env(),
        ).stdout
    )


def test_wheel_installs_and_runs_bench_and_learn_outside_the_checkout(tmp_path, capsys):
    log = _Log(tmp_path / "wheel-test-output.txt", capsys)
    log.write(f"\n##### wheel test (tmp dir {tmp_path})")

    # 1. Build the wheel from a copy of the tree (the build writes build/ and
    #    *.egg-info next to the sources; the checkout stays untouched).
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=_IGNORE)
    dist = tmp_path / "dist"
    log.run(
        "build wheel",
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(dist), str(src)],
        timeout=600,
        brief=True,
        env=_clean_env(),
    )
    (wheel,) = dist.glob("sentient_core-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    # The kernels install as sentient_kernels (the repository keeps its kernels/ folder):
    # "kernels" is another PyPI package's name.
    assert tops == {
        "sentient_kernels",
        "sentient_core",
        wheel.name.split("-py")[0] + ".dist-info",
    }, tops
    assert "sentient_core/benchmarks/cases_sedenion.py" in names
    assert "sentient_core/benchmarks/runner.py" in names
    assert {"sentient_core/py.typed", "sentient_kernels/py.typed"} <= set(names)  # PEP 561
    panel = {
        f"sentient_core/server/static/{f}"
        for f in ("index.html", "login.html", "panel.css", "panel.js", "charts.js")
    }
    assert panel <= set(names), panel - set(names)  # the web panel is package data

    # 2. A fresh venv with the wheel and its runtime dependencies (no extras).
    venv = tmp_path / "venv"
    log.run("create venv", [sys.executable, "-m", "venv", str(venv)], timeout=300, env=_clean_env())
    python = venv / "bin" / "python"
    log.run(
        "install wheel",
        [str(python), "-m", "pip", "install", "--no-input", str(wheel)],
        timeout=1200,
        brief=True,
        env=_clean_env(),
    )
    # Nothing the installed package needs may live in the build tree or the wheel dir.
    shutil.rmtree(src)
    shutil.rmtree(dist)

    # 3. The installed package refers to nothing outside the venv.
    info = _installed_files(python)
    site = Path(info["site"])
    for f in info["modules"]:
        assert Path(f).is_relative_to(site), f
    assert not info["bench"], "the checkout's bench/ must not be importable"
    assert not any(
        p and Path(p).resolve().is_relative_to(ROOT.resolve()) for p in info["sys_path"]
    ), info["sys_path"]
    assert str(ROOT) not in (info["direct_url"] or "")
    scanned = (
        [Path(f) for f in info["files"]] + sorted(site.glob("*.pth")) + [venv / "bin/sentient"]
    )
    needles = [str(ROOT).encode(), str(ROOT.resolve()).encode(), str(src).encode()]
    for path in scanned:
        if path.is_file():
            data = path.read_bytes()
            assert not any(n in data for n in needles), f"{path} points back into the checkout"

    # 4. Run the console script from a directory outside the checkout.
    work = tmp_path / "work"
    work.mkdir()
    sentient = str(venv / "bin" / "sentient")
    bench_out = log.run(
        "sentient bench",
        [sentient, "bench", "--quick", "--only", "sedenion"],
        timeout=1200,
        cwd=work,
        env=_clean_env(),
    )
    assert any(line.startswith("sedenion.mul_batch ") for line in bench_out.splitlines())
    note = bench_out.split("\n\n", 1)[0]
    assert note.startswith("missing benchmark peers")
    assert "faiss (faiss-cpu)" in note and "river" in note
    assert "pip install 'sentient-core[bench]'" in note

    learn_out = log.run(
        "sentient learn",
        [sentient, "learn", "--iterations", "1", "--interval", "0"],
        timeout=1200,
        cwd=work,
        env=_clean_env(SENTIENT_HOME=str(tmp_path / "home")),
    )
    assert f"data dir: {tmp_path / 'home'}" in learn_out
    assert "\nsummary: 1 iteration(s)" in learn_out

    # Without the server extra, serve names what to install instead of failing obscurely.
    serve = subprocess.run(
        [sentient, "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=work,
        env=_clean_env(SENTIENT_HOME=str(tmp_path / "home")),
    )
    log.write(f"\n=== sentient serve (no server extra): exit {serve.returncode}\n{serve.stderr}")
    assert serve.returncode == 2 and "pip install 'sentient-core[server]'" in serve.stderr

    timings = ", ".join(f"{k} {v:.1f} s" for k, v in log.timings.items())
    log.write(f"\n##### wheel test timings: {timings}; output saved to {log.path}")
