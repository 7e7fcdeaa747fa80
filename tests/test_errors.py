"""Every exception class sentient-core defines derives from SentientError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import sentient_core
from sentient_core.errors import ArgumentError, ArgumentTypeError, NotFoundError, SentientError

# Optional extras a module may need (the cluster extra's ray: sentient_core.cluster.ray_backend).
_OPTIONAL = {"ray"}


def _modules():
    for info in pkgutil.walk_packages(sentient_core.__path__, "sentient_core."):
        try:
            yield importlib.import_module(info.name)
        except ModuleNotFoundError as e:
            if e.name not in _OPTIONAL:
                raise


def test_every_exception_class_derives_from_sentient_error():
    seen, bad = 0, []
    for mod in _modules():
        for name, obj in vars(mod).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == mod.__name__
            ):
                seen += 1
                # Private control-flow exceptions never leave their module.
                if not name.startswith("_") and not issubclass(obj, SentientError):
                    bad.append(f"{mod.__name__}.{name}")
    assert seen >= 20, seen
    assert bad == []


def test_argument_errors_are_also_the_standard_exceptions():
    assert issubclass(ArgumentError, ValueError)
    assert issubclass(ArgumentTypeError, TypeError)
    assert issubclass(NotFoundError, KeyError)
    assert str(NotFoundError("no trace 3")) == "no trace 3"


def test_a_bad_argument_raises_a_sentient_error():
    from sentient_core.ingest import chunk_text

    with pytest.raises(SentientError) as info:
        chunk_text("abc", size=0)
    assert isinstance(info.value, ValueError)


def _all_error_classes() -> dict[str, type]:
    return {
        name: obj
        for mod in _modules()
        for name, obj in vars(mod).items()
        if inspect.isclass(obj)
        and issubclass(obj, SentientError)
        and obj.__module__ == mod.__name__
        and not name.startswith("_")
    }


def test_the_docs_document_the_whole_exception_tree():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()
    block = doc[doc.index("```\nSentientError") :]
    block = block[: block.index("```", 3)]
    classes = _all_error_classes()
    documented = set(re.findall(r"\b[A-Z][A-Za-z]+\b", block))
    assert set(classes) <= documented, sorted(set(classes) - documented)
    checked = 0
    for line in block.splitlines():
        # "├── Parent ─ Child, Child": every child derives from its parent.
        m = re.match(r"[│├└─ ]+([A-Za-z]+)(?: \(.*?\))? ─ (.*)", line)
        if m and m.group(1) in classes:
            for child in re.findall(r"[A-Z][A-Za-z]+", m.group(2)):
                if child in classes:
                    assert issubclass(classes[child], classes[m.group(1)]), (child, m.group(1))
                    checked += 1
    assert checked >= 15
