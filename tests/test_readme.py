"""The README and the docs are executable documentation: their examples must work.

(Their shell commands are run by tests/test_docs_commands.py.)
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
KERNELS_DOC = ROOT / "docs" / "kernels.md"
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"


def _section(title: str, level: int = 2, doc: Path | None = None) -> str:
    """Text of the section under ``#``*level ``title`` of ``doc`` (the README by default),
    up to the next ## or ### heading."""
    text = README if doc is None else doc.read_text()
    name = "README" if doc is None else doc.relative_to(ROOT)
    heading = "#" * level
    match = re.search(rf"^{heading} {re.escape(title)}\n(.*?)(?=^##{{1,2}} |\Z)", text, re.S | re.M)
    assert match, f"{name} has no '{heading} {title}' section"
    return match.group(1)


def _code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def test_quick_start_is_two_make_targets_and_ci_runs_the_test_one():
    blocks = _code_blocks(_section("Quick start (fresh machine)"), "sh")
    commands = [line.split("#")[0].strip() for line in blocks[0].splitlines() if line.strip()]
    assert commands == ["make run", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run: ", makefile, re.M) and re.search(r"^test: ", makefile, re.M)
    ci = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    # The README's test command, then the real-model lane (which the README describes).
    assert ci[-2:] == ["make test", "make test-llm"]
    assert re.search(r"^test-llm: ", makefile, re.M) and "make test-llm" in README


def test_compact_codes_example_runs(tmp_path):
    section = _section(
        "Compact codes, exact answers: `sentient_kernels.quantized`", doc=KERNELS_DOC
    )
    (code,) = _code_blocks(section, "python")
    script = tmp_path / "compact.py"
    script.write_text(code)
    out = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert "int8 top-10 equals float32 top-10" in out.stdout


@pytest.mark.slow
def test_embedding_example_runs(tmp_path):
    (code,) = _code_blocks(_section("Embedding the kernels", doc=KERNELS_DOC), "python")
    script = tmp_path / "example.py"
    script.write_text(code)
    out = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert "coherence" in out.stdout and "loss" in out.stdout


@pytest.mark.slow
def test_core_example_runs(tmp_path):
    (code,) = _code_blocks(_section("Using the core from Python"), "python")
    script = tmp_path / "core_example.py"
    script.write_text(code)
    out = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert float(lines[0].split()[0]) > 0.3  # the stored sentence is recalled
    assert lines[-1].startswith("2 iterations,")


@pytest.mark.slow
def test_njit_example_runs(tmp_path):
    section = _section("Calling the kernels from your own `@njit` code")
    (code,) = _code_blocks(section, "python")
    assert "unchecked." in code and "@numba.njit" in code
    script = tmp_path / "njit_example.py"
    script.write_text(code)
    out = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("entropy after 600 ticks")


def test_every_unchecked_name_is_documented_in_the_readme():
    from sentient_kernels import unchecked

    section = _section("Calling the kernels from your own `@njit` code")
    missing = [
        n for n in unchecked.__all__ if f"`{n}`" not in section and not n.startswith("text_")
    ]
    assert missing == []


def _layout_entries(tree: str, top: str) -> set[str]:
    """Names listed one indent level under ``top`` in the layout tree."""
    lines = tree.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(top))
    names = set()
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        if not line.startswith("   "):  # continuation lines are indented further
            names.add(line.split()[0])
    return names


def test_layout_lists_every_module_and_package():
    tree = _code_blocks(_section("What is here", doc=ARCHITECTURE_DOC), "")[0]
    for top, skip in (("sentient_core/", set()), ("kernels/", {"__init__.py", "py.typed"})):
        real = {
            p.name + ("/" if p.is_dir() else "")
            for p in (ROOT / top).iterdir()
            if p.name != "__pycache__" and (p.suffix == ".py" or p.name == "py.typed" or p.is_dir())
        } - skip
        assert _layout_entries(tree, top) == real, top


def test_the_command_table_lists_every_command_in_its_help_group_and_every_exit_code():
    from sentient_core.cli import EXIT_CODES, GROUPS

    section = _section("Command line")
    table: list[tuple[str, list[str]]] = []
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]
    for row in rows:
        task, cell = (c.strip() for c in re.split(r"(?<!\\)\|", row)[1:3])
        if task:
            table.append((task, []))
        table[-1][1].extend(code.split()[0] for code in re.findall(r"`([^`]+)`", cell))
    help_groups = [(title.split(" (")[0], list(names)) for title, names in GROUPS]
    assert table == help_groups
    codes = re.findall(r"^  (\d+) ", EXIT_CODES, re.M)
    assert codes == ["0", "1", "2", "3", "130", "141"]
    stated = section[section.index("Exit codes:") :]
    assert re.findall(r"\*\*(\d+)\*\*", stated) == codes
