"""Layout rules: one place for Numba flags; kernels import without the upper layers."""

import io
import json
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL_FILES = sorted((ROOT / "kernels").glob("*.py"))


def _code_lines(path: Path) -> dict[int, str]:
    """Source lines without comments and string literals (docstrings may say ``@njit``)."""
    lines: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING, tokenize.NL, tokenize.NEWLINE):
            continue
        lines[tok.start[0]] = lines.get(tok.start[0], "") + " " + tok.string
    return lines


def test_numba_flags_only_in_config():
    # Kernels choose only *which* policy they need (``jit(parallel=True)``,
    # ``jit(fastmath=False)``); the flag values themselves live in kernels/config.py.
    pattern = re.compile(r"numba \. (njit|jit)\b|\bnjit\b|\bcache\s*=|fastmath\s*=\s*(True|\{)")
    offenders = []
    for path in KERNEL_FILES:
        if path.name == "config.py":
            continue
        for lineno, line in sorted(_code_lines(path).items()):
            if pattern.search(line):
                offenders.append(f"{path.name}:{lineno}: {line.strip()}")
    assert offenders == []


def test_flag_pattern_still_sees_code():
    # The scan above skips strings and comments; make sure it still sees code.
    sample = ROOT / "kernels" / "config.py"
    assert any("numba . njit" in line for line in _code_lines(sample).values())


def test_every_kernel_module_has_a_warmup_and_all():
    import importlib

    from sentient_kernels.warmup import MODULES

    for name in MODULES:
        # Imported by name: alone, this test must not rely on another having imported it.
        mod = importlib.import_module(f"sentient_kernels.{name}")
        assert callable(mod._warmup), name
        assert mod.__all__, name


def test_kernels_import_without_upper_layers():
    code = (
        "import sys, kernels, sentient_kernels.warmup\n"
        "bad = [m for m in ('sentient_core', 'lmdb', 'httpx', 'msgspec', 'pypdf', 'bench') "
        "if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


# What these subprocesses print: a JSON object of the facts each test checks.
_IMPORT_KERNELS = """
import json, os
before = dict(os.environ)
import sentient_kernels, sentient_kernels.unchecked, sentient_kernels.warmup
import numba.np.ufunc.parallel as parallel
after = dict(os.environ)
changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
print(json.dumps({"changed": changed, "threads": parallel._is_initialized}))
"""

_PREFER_PASSIVE = """
import json, os, sys
import numpy as np
from sentient_kernels import prsc
from sentient_kernels.config import prefer_passive_threads
if sys.argv[1] == "late":  # a parallel kernel starts numba's threads first
    prsc.run(prsc.init_state(8), 1, parallel=True)
first = prefer_passive_threads()
print(json.dumps({"first": first, "again": prefer_passive_threads(),
                  "policy": os.environ.get("OMP_WAIT_POLICY")}))
"""

_CLI_VERSION = """
import json, os
from sentient_core.cli import main
try:
    main(["--version"])
except SystemExit:
    pass
print(json.dumps({"policy": os.environ.get("OMP_WAIT_POLICY")}))
"""


def _run_json(code: str, *args: str, policy: str | None = None) -> dict:
    # The test process may have set the policy itself (conftest): start without it.
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_importing_kernels_changes_no_environment_and_starts_no_threads():
    assert _run_json(_IMPORT_KERNELS) == {"changed": [], "threads": False}


def test_prefer_passive_threads_sets_the_policy_once_and_only_in_time():
    assert _run_json(_PREFER_PASSIVE, "early") == {
        "first": True,
        "again": False,
        "policy": "PASSIVE",
    }
    # An explicit setting wins; after numba's threads started, it is too late to set.
    explicit = _run_json(_PREFER_PASSIVE, "early", policy="ACTIVE")
    assert explicit == {"first": False, "again": False, "policy": "ACTIVE"}
    assert _run_json(_PREFER_PASSIVE, "late") == {"first": False, "again": False, "policy": None}


def test_the_cli_prefers_passive_threads():
    assert _run_json(_CLI_VERSION) == {"policy": "PASSIVE"}


def test_only_the_chaperone_side_touches_network_or_files():
    """Curiosity, query, reflect, the learner and the judge get content only through the chaperone."""
    import ast

    gated = [
        "learning/curiosity.py",
        "learning/query.py",
        "learning/reflect.py",
        "learning/learner.py",
        "autonomy/judge.py",
        "autonomy/drives.py",
    ]
    banned_modules = {
        "httpx",
        "socket",
        "urllib",
        "http",
        "requests",
        "ssl",
        "shutil",
        "subprocess",
    }
    banned_calls = {"open", "urlopen"}
    problems = []
    for rel in gated:
        tree = ast.parse((ROOT / "sentient_core" / rel).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [(node.module or "").split(".")[0]]
            else:
                names = []
            problems += [f"{rel} imports {n}" for n in names if n in banned_modules]
            if isinstance(node, ast.Call):
                fn = node.func
                name = (
                    fn.id
                    if isinstance(fn, ast.Name)
                    else fn.attr
                    if isinstance(fn, ast.Attribute)
                    else ""
                )
                if name in banned_calls or name in {
                    "read_text",
                    "read_bytes",
                    "write_text",
                    "write_bytes",
                }:
                    problems.append(f"{rel}:{node.lineno} calls {name}()")
    assert problems == []


def _imports(path: Path) -> list[tuple[int, str]]:
    import ast

    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.append((node.lineno, node.module or ""))
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def _shipped_and_bench_files() -> list[Path]:
    return [
        ROOT / "cli.py",
        *sorted((ROOT / "kernels").rglob("*.py")),
        *sorted((ROOT / "sentient_core").rglob("*.py")),
        *sorted((ROOT / "bench").rglob("*.py")),
    ]


def test_no_sys_path_edits():
    """Everything resolves through the installed package: nothing edits ``sys.path``."""
    import ast

    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in _shipped_and_bench_files()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and node.attr in {"path", "addsitedir"}
        and isinstance(node.value, ast.Name)
        and node.value.id in {"sys", "site"}
    ]
    assert offenders == []


def test_only_the_cli_and_bench_import_the_benchmarks():
    """The benchmarks sit on top: kernels and the library never import them, nor bench/ or tests/."""
    pkg = ROOT / "sentient_core" / "benchmarks"
    allowed = {ROOT / "sentient_core" / "cli" / "kernel_cmds.py"}
    offenders = []
    for path in _shipped_and_bench_files():
        for lineno, name in _imports(path):
            top = name.split(".")[0]
            where = f"{path.relative_to(ROOT)}:{lineno} imports {name}"
            if path.is_relative_to(ROOT / "bench"):
                continue
            if top in {"bench", "tests"} or (
                name.startswith("sentient_core.benchmarks")
                and path not in allowed
                and not path.is_relative_to(pkg)
            ):
                offenders.append(where)
    assert offenders == []


def _private_kernel_uses(path: Path) -> list[str]:
    import ast

    tree = ast.parse(path.read_text())
    aliases: set[str] = set()  # local names bound to kernels or a kernels module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in ("kernels", "sentient_kernels"):
                    found += [f"import {alias.name}" for p in parts[1:] if p.startswith("_")]
                    aliases.add(alias.asname or parts[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
            "kernels",
            "sentient_kernels",
        ):
            parts = node.module.split(".")
            found += [f"from {node.module} import" for p in parts[1:] if p.startswith("_")]
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append(f"from {node.module} import {alias.name}")
                aliases.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_no_module_above_the_kernels_uses_a_private_kernel_name():
    files = [p for p in _shipped_and_bench_files() if not p.is_relative_to(ROOT / "kernels")]
    offenders = {}
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        uses = _private_kernel_uses(path)
        if uses:
            offenders[rel] = uses
    assert offenders == {}


def test_private_kernel_name_scan_finds_violations(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from sentient_kernels import prsc\n"
        "from sentient_kernels.text import _encode_kernel\n"
        "import sentient_kernels._checks\n"
        "prsc._excite(1)\n"
        "prsc.run(1)\n"
    )
    uses = _private_kernel_uses(sample)
    assert len(uses) == 3 and any("_excite" in u for u in uses)


def test_one_import_path_for_the_kernels():
    # The installed name is sentient_kernels; the repository's kernels/ folder must
    # never be imported under its own name too (two copies of every dispatcher).
    code = (
        "import sys, sentient_core.cli, sentient_core.core, sentient_core.server,"
        " sentient_kernels.warmup\n"
        "sentient_kernels.warmup.warmup()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kernels'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    for path in [*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md")]:
        text = path.read_text()
        old = "kernels"  # the folder's name, never an import path
        assert f"from {old} import" not in text and f"import {old}\n" not in text, path
