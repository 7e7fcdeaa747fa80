"""The SearXNG JSON API: the search engine self-hosting users run.

One search is ``GET {url}/search?q=QUERY&format=json`` (the instance must list
``json`` under ``search.formats`` in its ``settings.yml``). The answer's
``results`` array is read; of each entry the ``url``, ``title`` and ``content``
(the snippet) are kept. The body is read up to :data:`MAX_RESPONSE_BYTES` and
validated with msgspec: an answer that is not JSON, has no ``results`` array or is
too large raises :class:`~sentient_core.search.types.SearchResponseError`; an entry
that is not a well-formed candidate (no URL, a URL that is not a string or is too
long) is dropped and counted. Nothing here decides whether a URL may be fetched:
the safety filter does that for every candidate (:mod:`sentient_core.learning.searching`).

The instance is the user's own (typically ``http://localhost:8888``), configured
like the chat model's URL, so it is not held to the fetch allow-list; the
environment's proxies are not used (``trust_env=False``).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import msgspec

from sentient_core.errors import ArgumentError
from sentient_core.search.types import (
    MAX_TARGET_CHARS,
    SearchError,
    SearchHit,
    SearchResponseError,
    SearchResults,
    SearchTimeout,
)

__all__ = ["MAX_RESPONSE_BYTES", "SearxngProvider"]

MAX_RESPONSE_BYTES = 4 << 20
"""Largest search answer read (SearXNG's answers are tens of kilobytes)."""


# SearXNG sends many more fields per result (engine, score, category …) and they vary by
# version and engine: an external API's extra keys are ignored, not refused.
class _Result(msgspec.Struct, frozen=True):
    url: str
    title: str = ""
    content: str = ""


class _Page(msgspec.Struct, frozen=True):
    results: list[msgspec.Raw]


_PAGE = msgspec.json.Decoder(_Page)
_RESULT = msgspec.json.Decoder(_Result)


class SearxngProvider:
    """Search a SearXNG instance through its JSON API.

    Parameters
    ----------
    url : str
        The instance's base URL (``http://`` or ``https://``).
    max_results : int
        Candidates kept from one answer.
    timeout_s : float
        Connect and read timeout.
    transport : httpx.BaseTransport, optional
        The client's transport (unit tests: ``httpx.MockTransport``).
    user_agent : str
    """

    name = "searxng"

    def __init__(
        self,
        url: str,
        *,
        max_results: int = 10,
        timeout_s: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        user_agent: str = "sentient-core/0.1",
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ArgumentError(f"search.url must be an http(s) URL with a host, got {url!r}")
        if max_results < 1:
            raise ArgumentError(f"max_results must be >= 1, got {max_results}")
        self.url = url.rstrip("/")
        self.max_results = max_results
        self._client = httpx.Client(
            transport=transport,
            timeout=httpx.Timeout(timeout_s),
            trust_env=False,
            headers={"User-Agent": user_agent, "Accept": "application/json"},
        )

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def search(self, query: str) -> SearchResults:
        """Candidates for ``query``, in the engine's order.

        Raises
        ------
        SearchTimeout
            No connection or no answer in time.
        SearchResponseError
            HTTP status >= 400, a redirect, a body over :data:`MAX_RESPONSE_BYTES`,
            not JSON, or no ``results`` array.
        SearchError
            Any other network failure.
        """
        body = self._get(query)
        try:
            page = _PAGE.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise SearchResponseError(self.name, f"not a SearXNG JSON answer: {exc}") from None
        hits: list[SearchHit] = []
        dropped = 0
        for raw in page.results:
            try:
                item = _RESULT.decode(raw)
            except (msgspec.DecodeError, msgspec.ValidationError):
                dropped += 1
                continue
            url = item.url.strip()
            if not url or len(url) > MAX_TARGET_CHARS:
                dropped += 1
                continue
            if len(hits) < self.max_results:
                hits.append(
                    SearchHit(
                        url=url,
                        title=" ".join(item.title.split())[:300],
                        snippet=" ".join(item.content.split())[:1000],
                        provider=self.name,
                    )
                )
        return SearchResults(hits=tuple(hits), dropped=dropped)

    def _get(self, query: str) -> bytes:
        try:
            with self._client.stream(
                "GET",
                f"{self.url}/search",
                params={"q": query, "format": "json"},
                follow_redirects=False,
            ) as response:
                if response.status_code >= 300:
                    raise SearchResponseError(
                        self.name, f"HTTP {response.status_code} {response.reason_phrase}"
                    )
                chunks: list[bytes] = []
                total = 0
                for chunk in response.iter_bytes():
                    total += len(chunk)
                    if total > MAX_RESPONSE_BYTES:
                        raise SearchResponseError(
                            self.name, f"answer larger than {MAX_RESPONSE_BYTES} bytes"
                        )
                    chunks.append(chunk)
        except httpx.TimeoutException as exc:
            raise SearchTimeout(self.name, f"timed out ({type(exc).__name__})") from None
        except httpx.HTTPError as exc:
            raise SearchError(self.name, f"network error: {type(exc).__name__}: {exc}") from None
        return b"".join(chunks)
