"""The package import graph: one direction only, no cycles, and a kernel boundary.

Every unit (``kernels``, and each top-level module or sub-package of
``sentient_core``) has a rank; a unit may import only units of a lower rank.
That makes the graph acyclic by construction and keeps data flowing one way
(SPEC: kernels ← store ← memory/observer ← learning/autonomy ← cli). (That no
module above ``kernels/`` uses a private kernel name is tests/test_packaging.py's.)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RANKS: dict[str, int] = {
    "kernels": 0,
    "sentient_core.errors": 1,
    "sentient_core.safetext": 1,
    "sentient_core.analysis": 1,  # what a word is: below everything that reads words
    "sentient_core.confine": 2,
    "sentient_core.store": 2,
    "sentient_core.vocab": 2,
    "sentient_core.pydocs": 2,
    "sentient_core.corpus": 2,
    "sentient_core.progress": 2,
    "sentient_core.ingest": 3,
    "sentient_core.encoder": 4,
    "sentient_core.relevance": 4,
    "sentient_core.keyphrases": 5,
    "sentient_core.observer": 5,
    "sentient_core.memory": 5,
    "sentient_core.events": 5,
    "sentient_core.integrate": 6,
    "sentient_core.misses": 6,  # recalls that found nothing relevant, pooled by subject
    "sentient_core.search": 6,  # search providers: read the allowed dirs, ask SearXNG
    "sentient_core.retrieval_eval": 6,
    "sentient_core.metamemory": 6,
    "sentient_core.autonomy": 7,
    "sentient_core.recipes": 7,  # recipes key on meta-memory's domains; learning tries them
    "sentient_core.recall": 7,  # the rankings: memory's and the learned scorer's
    "sentient_core.cluster": 7,  # memory over shards (one LMDB directory each), recalled as one
    "sentient_core.core": 8,  # the façade over memory, meta-memory, ingest and recall
    "sentient_core.layers": 8,  # semantic notes: condensed from memory, checked by metamemory
    "sentient_core.learning": 9,
    "sentient_core.liveview": 10,
    "sentient_core.config": 10,
    "sentient_core.benchmarks": 11,
    "sentient_core.evaluation": 11,
    "sentient_core.control": 11,
    "sentient_core": 11,  # the package root: the public API (lazy imports)
    "sentient_core.server": 12,
    "sentient_core.cli": 13,
}


def _unit(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] in ("kernels", "sentient_kernels"):
        return "kernels"
    if parts[0] != "sentient_core":
        return None
    return "sentient_core" if len(parts) == 1 else f"sentient_core.{parts[1]}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, imported names) of every absolute import in a file."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


def _package_files() -> list[Path]:
    return sorted((ROOT / "sentient_core").rglob("*.py")) + sorted((ROOT / "kernels").glob("*.py"))


def test_every_unit_has_a_rank():
    units = {_unit(_module_name(p)) for p in _package_files()}
    assert units <= set(RANKS), sorted(units - set(RANKS))


def test_imports_only_go_down_the_ranks():
    upward = []
    edges: set[tuple[str, str]] = set()
    for path in _package_files():
        here = _unit(_module_name(path))
        assert here is not None
        for line, module, _ in _imports(path):
            there = _unit(module)
            if there is None or there == here:
                continue
            edges.add((here, there))
            if RANKS[there] >= RANKS[here]:
                upward.append(f"{path.relative_to(ROOT)}:{line}: {here} imports {module}")
    assert upward == []
    assert len(edges) >= 30  # the scan saw the real graph
    print("\n".join(f"{a} -> {b}" for a, b in sorted(edges)))


def test_kernels_never_import_the_layers_above():
    for path in sorted((ROOT / "kernels").glob("*.py")):
        for line, module, _ in _imports(path):
            assert module.split(".")[0] != "sentient_core", f"{path.name}:{line}"
