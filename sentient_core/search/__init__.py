"""Search providers: where the learner finds sources it does not have yet.

A provider takes a query and returns candidate sources
(:class:`~sentient_core.search.types.SearchHit`: a URL or a local path, a title,
a snippet, the provider's name). Two ship:

``searxng``  :class:`~sentient_core.search.searxng.SearxngProvider`, the JSON API of
             a SearXNG instance (``GET {url}/search?q=…&format=json``)
``local``    :class:`~sentient_core.search.local.LocalProvider`, the files of the
             allowed directories ranked by BM25 (offline)

:func:`provider_from` builds the one ``[search]`` names. A provider only finds
candidates; the learner's search step (:mod:`sentient_core.learning.searching`)
puts every one through the safety filter before anything is fetched.

Modules
-------
types    the hit, the results, the settings, the provider protocol, the errors
searxng  the SearXNG JSON API
local    the offline provider
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from sentient_core.errors import ArgumentError
from sentient_core.search.local import LocalProvider
from sentient_core.search.searxng import SearxngProvider
from sentient_core.search.types import (
    PROVIDERS,
    SearchError,
    SearchHit,
    SearchProvider,
    SearchResponseError,
    SearchResults,
    SearchSettings,
    SearchTimeout,
)

__all__ = [
    "PROVIDERS",
    "LocalProvider",
    "SearchError",
    "SearchHit",
    "SearchProvider",
    "SearchResponseError",
    "SearchResults",
    "SearchSettings",
    "SearchTimeout",
    "SearxngProvider",
    "provider_from",
]


def provider_from(
    settings: SearchSettings,
    dirs: Sequence[str | os.PathLike[str]] = (),
    *,
    allow_hardlinks: bool = False,
    user_agent: str = "sentient-core/0.1",
) -> SearchProvider | None:
    """The provider ``settings`` names (None for ``none``); ``dirs``: the allowed
    directories the local provider searches.

    Raises
    ------
    ArgumentError
        ``searxng`` without a ``url`` (or with one that is not http(s)).
    """
    if settings.provider == "none":
        return None
    if settings.provider == "local":
        return LocalProvider(
            dirs, max_results=settings.max_results, allow_hardlinks=allow_hardlinks
        )
    if not settings.url:
        raise ArgumentError("search.provider = 'searxng' needs search.url (the instance's URL)")
    return SearxngProvider(
        settings.url,
        max_results=settings.max_results,
        timeout_s=settings.timeout_s,
        user_agent=user_agent,
    )
