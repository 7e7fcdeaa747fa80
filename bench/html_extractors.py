"""The HTML main-content extractors the HTML benches can measure (``--extractor``).

ours                   :func:`sentient_core.ingest.extract_bytes` (sentient_core/ingest/html_text.py)
trafilatura            ``trafilatura.extract(data, include_comments=False, include_tables=True)``
trafilatura-recall     the same with ``favor_recall=True``
trafilatura-precision  the same with ``favor_precision=True``
trafilatura-fast       the same with ``fast=True`` (no readability/jusText fallback)

Each is a callable ``(name, data) -> text`` on the page's bytes. trafilatura
decodes the bytes itself; ``None`` (nothing extracted) is raised as
:class:`~sentient_core.ingest.EmptyFile`, as ours raises for a page without
text. trafilatura is imported only when one of its configurations is chosen
(``pip install trafilatura``; it is not a dependency of the project).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from sentient_core.ingest import EmptyFile, extract_bytes

Extractor = Callable[[str, bytes], str]

_TRAFILATURA_OPTIONS: dict[str, dict[str, Any]] = {
    "trafilatura": {},
    "trafilatura-recall": {"favor_recall": True},
    "trafilatura-precision": {"favor_precision": True},
    "trafilatura-fast": {"fast": True},
}
NAMES = ("ours", *_TRAFILATURA_OPTIONS)


def _ours(name: str, data: bytes) -> str:
    kwargs = {}
    if "time_budget" in inspect.signature(extract_bytes).parameters:
        kwargs["time_budget"] = None  # the benches time the whole call; no budget
    return extract_bytes(name, data, **kwargs)


def _trafilatura(options: dict[str, Any]) -> Extractor:
    import trafilatura

    def extract(name: str, data: bytes) -> str:
        text = trafilatura.extract(data, include_comments=False, include_tables=True, **options)
        if not text:
            raise EmptyFile(name, "trafilatura extracted no main text")
        return text

    return extract


def get(name: str) -> Extractor:
    """The extractor called ``name`` (one of :data:`NAMES`)."""
    if name == "ours":
        return _ours
    return _trafilatura(_TRAFILATURA_OPTIONS[name])


def parse(spec: str) -> list[str]:
    """Names from a comma-separated ``--extractor`` value, checked."""
    names = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [n for n in names if n not in NAMES]
    if unknown or not names:
        raise SystemExit(
            f"--extractor: unknown {unknown or spec!r}; choose from {', '.join(NAMES)}"
        )
    return names
