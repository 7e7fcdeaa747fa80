"""Grounding reads: a URL fetched or a local file read, as text with its provenance.

The chaperone serves ``fetch_content`` and ``read_local`` (and the reads behind a
``summarize``) with these. The fetcher has already read and size-checked the
bytes (a local file opened through :mod:`sentient_core.confine`); the text is
extracted from those very bytes, never by opening the path again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from sentient_core.errors import SentientError
from sentient_core.ingest import IngestError, extract_bytes
from sentient_core.safetext import safe_path_text
from sentient_core.vocab import Passage, Source

if TYPE_CHECKING:
    from sentient_core.learning.fetch import Fetcher
    from sentient_core.learning.offline import CorpusAnswerer

__all__ = [
    "Content",
    "RequestFailed",
    "content_fields",
    "extract_data",
    "fetch_content",
    "read_content",
]


class RequestFailed(SentientError):
    """A handler's clean failure: the chaperone turns it into ``ok=False`` with these
    fields (it never leaves :meth:`Chaperone.handle`)."""

    def __init__(self, error: str, **fields: Any):
        super().__init__(error)
        self.error = error
        self.fields = fields


class Content(msgspec.Struct, frozen=True):
    """Text obtained by a grounding read, with its provenance."""

    text: str
    source: Source
    saved_path: str = ""
    mime: str = ""
    bytes: int = 0


def extract_data(path: str, data: bytes) -> str:
    """Text of content already read, by the rules of :func:`sentient_core.ingest.extract_text`.

    The fetcher has read (and size-checked) exactly these bytes, opening a local
    file through :mod:`sentient_core.confine` (component by component from the
    allowed root, no symlink followed by the kernel, the inode proved inside);
    extracting from them, rather than opening the path again, keeps the text the
    text that was checked and avoids a second read. The format comes from
    ``path``'s extension.

    Raises
    ------
    IngestError
        A subclass naming the file and the reason.
    """
    return extract_bytes(path, data)


def _extract(path: str, data: bytes, **fields: Any) -> str:
    try:
        return extract_data(path, data)
    except IngestError as err:
        raise RequestFailed(f"{type(err).__name__}: {err.reason}", **fields) from None


def fetch_content(fetcher: Fetcher, answerer: CorpusAnswerer | None, url: str) -> Content:
    """Fetch ``url`` (saved into the incoming dir, which the answerer then indexes)."""
    if not url:
        raise RequestFailed("fetch_content needs a url")
    result = fetcher.fetch(url)
    if answerer is not None and result.saved_path:
        # The file is in the incoming dir now: index it (unchanged files are not re-read).
        answerer.refresh()
    saved = str(result.saved_path or "")
    kept = {"saved_path": saved, "mime": result.mime, "bytes": result.bytes}
    if not saved:
        raise RequestFailed("the fetcher saved no file to extract text from", **kept)
    text = _extract(saved, result.data, **kept)
    return Content(
        text=text,
        source=Source("web", str(result.final_url or result.url)),
        saved_path=saved,
        mime=result.mime,
        bytes=result.bytes,
    )


def read_content(fetcher: Fetcher, path: str) -> Content:
    """Read the local file ``path`` from an allowed directory."""
    if not path:
        raise RequestFailed("read_local needs a path")
    local = fetcher.read_local(path)
    real = str(local.path)
    text = _extract(real, local.data, mime=local.mime, bytes=local.bytes)
    # The source is provenance to store and show: a name of any bytes made safe text.
    return Content(
        text=text,
        source=Source("local", safe_path_text(real)),
        mime=local.mime,
        bytes=local.bytes,
    )


def content_fields(c: Content) -> dict[str, Any]:
    """The response fields of a grounding read: the whole text as one grounded passage."""
    return {
        "ok": True,
        "content": c.text,
        "sources": (c.source,),
        "passages": (Passage(text=c.text, source=c.source, start=0, end=len(c.text)),),
        "grounded": True,
        "saved_path": c.saved_path,
        "mime": c.mime,
        "bytes": c.bytes,
    }
