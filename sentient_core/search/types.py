"""What a search provider returns, what it raises, and how one is configured.

A provider (:class:`SearchProvider`) takes a query and returns candidate
sources as :class:`SearchHit` records: a URL (``https://…``) or a local path,
with the title and snippet the provider gave and the provider's name. A hit is
only a *candidate*: nothing is fetched until the safety filter allowed it
(:mod:`sentient_core.learning.searching`).

Exceptions::

    SearchError          (a SentientError) the search failed; ``.provider``, ``.reason``
    ├── SearchTimeout        connect/read timeout
    └── SearchResponseError  the answer was not what the API promises (HTTP error
                             status, not JSON, wrong shape, too large)
"""

from __future__ import annotations

from typing import Annotated, Literal, Protocol

import msgspec

from sentient_core.errors import SentientError

__all__ = [
    "MAX_TARGET_CHARS",
    "PROVIDERS",
    "SearchError",
    "SearchHit",
    "SearchProvider",
    "SearchResponseError",
    "SearchResults",
    "SearchSettings",
    "SearchTimeout",
]

PROVIDERS = ("none", "local", "searxng")
"""The providers ``[search] provider`` may name."""

MAX_TARGET_CHARS = 2000
"""Longest URL or path a hit may carry (a longer one is dropped as hostile)."""

Target = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TARGET_CHARS)]
Title = Annotated[str, msgspec.Meta(max_length=300)]
Snippet = Annotated[str, msgspec.Meta(max_length=1000)]


class SearchHit(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One candidate source a provider found.

    Attributes
    ----------
    url : str
        The candidate: a URL (web providers) or a file's path (the local provider).
    title, snippet : str
        What the provider says about it (cut to 300 and 1000 characters); shown,
        never stored as knowledge.
    provider : str
        The provider's name (``searxng``, ``local``).
    local : bool
        ``url`` is a local path (read with ``read_local``), not a URL (``fetch_content``).
    """

    url: Target
    title: Title = ""
    snippet: Snippet = ""
    provider: str
    local: bool = False


class SearchResults(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What one search found.

    Attributes
    ----------
    hits : tuple of SearchHit
        Candidates, best first.
    dropped : int
        Entries of the provider's answer that were not a well-formed candidate (no
        URL, a URL that is not a string or is longer than :data:`MAX_TARGET_CHARS`).
    """

    hits: tuple[SearchHit, ...] = ()
    dropped: Annotated[int, msgspec.Meta(ge=0)] = 0


class SearchProvider(Protocol):
    """What the learner's search step needs from a provider."""

    name: str

    def search(self, query: str) -> SearchResults:
        """Candidates for ``query``, best first; raises :class:`SearchError`."""
        ...

    def close(self) -> None:
        """Release network clients (a no-op for a provider without any)."""
        ...


class SearchError(SentientError):
    """A search failed (the learner records it as an error event and goes on).

    Attributes
    ----------
    provider : str
    reason : str
        What went wrong, in words.
    """

    def __init__(self, provider: str, reason: str) -> None:
        self.provider = provider
        self.reason = reason
        super().__init__(f"{provider}: {reason}")

    def __reduce__(self):
        return (type(self), (self.provider, self.reason))


class SearchTimeout(SearchError):
    """The search engine did not connect or answer in time."""


class SearchResponseError(SearchError):
    """The search engine's answer was an HTTP error, not JSON, of the wrong shape or too
    large."""


class SearchSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``[search]``: where the learner looks for new sources.

    Attributes
    ----------
    provider : {"none", "local", "searxng"}
        ``none`` (the default): no search. ``local``: the files of the allowed
        directories (the incoming dir, ``corpus_dirs``, ``safety.allowed_dirs``)
        ranked by BM25 over their names and text. ``searxng``: a SearXNG instance's
        JSON API at ``url``.
    url : str
        The SearXNG base URL (``http://localhost:8888``); the learner asks
        ``{url}/search?q=…&format=json``. The instance must have the ``json``
        format enabled (``search.formats`` in its ``settings.yml``).
    max_results : int
        Candidates read from one search (1-50).
    fetch : int
        Allowed candidates fetched per search (1-5), best first.
    timeout_s : float
        Connect and read timeout of one search request.
    """

    provider: Literal["none", "local", "searxng"] = "none"
    url: Annotated[str, msgspec.Meta(max_length=2000)] = ""
    max_results: Annotated[int, msgspec.Meta(ge=1, le=50)] = 10
    fetch: Annotated[int, msgspec.Meta(ge=1, le=5)] = 2
    timeout_s: Annotated[float, msgspec.Meta(gt=0.0, le=300.0)] = 10.0
