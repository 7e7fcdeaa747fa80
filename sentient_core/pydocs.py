"""The documentation that ships with Python, as documents: one loader for the whole package.

Used by the offline answerer (the embedded chaperone's default corpus) and by
the retrieval-quality evaluation. Two kinds of document:

* every ``pydoc_data.topics`` topic (the text of ``help("topic")``), by name;
* the docstring of every public standard-library module of at least
  :data:`MIN_DOCSTRING_CHARS` characters, by name. A module written in Python
  is never imported: its docstring is read from the source with the tokenizer.
  A built-in or extension module (``math``, ``itertools`` …) has no source, so
  it is imported (C code; no Python-level side effects) and its ``__doc__`` read.
  Modules with import side effects (GUI, browser, interpreter state) are
  skipped (:data:`SKIPPED_MODULES`).

Identical texts are kept once; the order is fixed (topics by name, then
modules by name), so document numbers are stable on one interpreter.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import importlib.machinery
import importlib.util
import inspect
import io
import sys
import tokenize
import warnings
from typing import Literal

import msgspec

__all__ = ["MIN_DOCSTRING_CHARS", "SKIPPED_MODULES", "PyDoc", "documents"]

MIN_DOCSTRING_CHARS = 200

SKIPPED_MODULES: frozenset[str] = frozenset(
    {
        "antigravity",
        "this",
        "idlelib",
        "tkinter",
        "turtle",
        "turtledemo",
        "lib2to3",
        "ensurepip",
        "readline",
        "rlcompleter",
        "site",
        "sitecustomize",
        "usercustomize",
        "pydoc_data",
        # setuptools replaces it with a shim whose finder imports setuptools' own copy.
        "distutils",
    }
)
"""Modules never read: GUI, browser, printing or interpreter-state side effects."""


class PyDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One shipped document.

    Attributes
    ----------
    kind : {"topic", "module"}
    name : str
        Topic or module name.
    text : str
    """

    kind: Literal["topic", "module"]
    name: str
    text: str

    @property
    def ref(self) -> str:
        """Its source id: ``pydoc:topic:<name>`` or ``pydoc:module:<name>``."""
        return f"pydoc:{self.kind}:{self.name}"


def _source_docstring(path: str) -> str | None:
    """The module docstring of a .py file, read with the tokenizer (no import)."""
    try:
        with open(path, "rb") as f:
            for tok in tokenize.tokenize(f.readline):
                if tok.type in (tokenize.ENCODING, tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE):
                    continue
                if tok.type != tokenize.STRING:
                    return None
                # literal_eval handles prefixes (r, u) and escapes; a b-string is not a docstring.
                value = ast.literal_eval(tok.string)
                return value if isinstance(value, str) else None
    except (OSError, SyntaxError, ValueError, tokenize.TokenError):
        return None
    return None


def _compiled_docstring(name: str) -> str | None:
    """``__doc__`` of a built-in or extension module (imported: it has no Python code)."""
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            doc = importlib.import_module(name).__doc__
    except (Exception, SystemExit):
        return None
    return doc if isinstance(doc, str) else None


def _module_docstring(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin == "built-in" or isinstance(
        spec.loader, importlib.machinery.ExtensionFileLoader
    ):
        return _compiled_docstring(name)
    if spec.origin and spec.origin.endswith(".py"):
        return _source_docstring(spec.origin)
    return None


@functools.cache
def documents() -> tuple[PyDoc, ...]:
    """The shipped documents, in a fixed order (see the module docstring)."""
    docs: list[PyDoc] = []
    seen: set[str] = set()
    topics: dict[str, str]
    try:
        from pydoc_data.topics import topics as shipped

        topics = shipped
    except ImportError:  # some distributions split pydoc_data out
        topics = {}
    for name in sorted(topics):
        text = topics[name].strip()
        if text and text not in seen:
            seen.add(text)
            docs.append(PyDoc("topic", name, text))
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in SKIPPED_MODULES:
            continue
        doc = _module_docstring(name)
        if doc is None:
            continue
        text = inspect.cleandoc(doc)
        if len(text) >= MIN_DOCSTRING_CHARS and text not in seen:
            seen.add(text)
            docs.append(PyDoc("module", name, text))
    return tuple(docs)
