"""The chaperone's interaction log: the last requests, responses, refusals and errors.

Entries are numbered over the log's lifetime and stamped by a clock; only the
newest ``size`` are kept. :func:`request_data` and :func:`response_data` are
the details logged (and published with the ``chaperone.*`` events): content
only as a short preview.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse

__all__ = [
    "PREVIEW_CHARS",
    "Interaction",
    "InteractionKind",
    "InteractionLog",
    "request_data",
    "response_data",
]

PREVIEW_CHARS = 200

InteractionKind = Literal["request", "response", "refusal", "error"]


class Interaction(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One entry of the chaperone's interaction log.

    Attributes
    ----------
    seq : int
        Position in the chaperone's lifetime (keeps counting when old entries drop).
    t : float
        Unix time from the chaperone's clock.
    kind : str
        ``request``, ``response``, ``refusal`` or ``error``.
    request_id, type : str
        The request it belongs to.
    data : dict
        Details (JSON-compatible; content only as a short preview).
    """

    seq: int
    t: float
    kind: InteractionKind
    request_id: str
    type: str
    data: dict[str, Any]


class InteractionLog:
    """The newest ``size`` interactions, oldest first (thread-safe).

    Parameters
    ----------
    size : int
        Entries kept (oldest dropped first).
    clock : callable
        Unix time for each entry.
    """

    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        self._entries: deque[Interaction] = deque(maxlen=size)
        self._seq = itertools.count()
        self._clock = clock
        self._lock = threading.Lock()

    def add(self, kind: InteractionKind, req: ChaperoneRequest, data: dict) -> None:
        """Log one entry of ``kind`` for request ``req``."""
        entry = Interaction(
            seq=next(self._seq),
            t=self._clock(),
            kind=kind,
            request_id=req.id,
            type=req.type,
            data=data,
        )
        with self._lock:
            self._entries.append(entry)

    def entries(self, last: int | None = None) -> list[Interaction]:
        """The logged interactions, oldest first (only the ``last`` ones if given)."""
        with self._lock:
            entries = list(self._entries)
        return entries if last is None else entries[-last:] if last > 0 else []


def request_data(request: ChaperoneRequest) -> dict[str, Any]:
    """What is logged and published of a request (text only as its length)."""
    return {
        "topic": request.topic,
        "question": request.question,
        "url": request.url,
        "path": request.path,
        "text_chars": len(request.text),
        "gap_type": request.gap_type,
    }


def response_data(response: ChaperoneResponse, fallback: str) -> dict[str, Any]:
    """What is logged and published of a response (content only as a preview)."""
    return {
        "ok": response.ok,
        "refused": response.refused,
        "check": response.check,
        "reason": response.reason,
        "error": response.error,
        "grounded": response.grounded,
        "sources": response.sources,
        "saved_path": response.saved_path,
        "mime": response.mime,
        "bytes": response.bytes,
        "tokens": response.tokens,
        "elapsed_s": response.elapsed_s,
        "content_chars": len(response.content),
        "preview": response.content[:PREVIEW_CHARS],
        "fallback": fallback,
    }
