"""Query formulation: gaps and earlier answers → chaperone requests (SPEC §4).

All four request types are produced:

question       a gap's question (the default)
fetch_content  a gap that names a URL, or an allowed-looking URL cited in an
               earlier answer (followed up once)
read_local     a gap that names a file (a user's "please read notes/tides.md").
               A corpus file an answer's passage came from is *not* read whole
               afterwards: the passage is what answered the question, and
               storing whole files is ingesting, not learning
summarize      long grounded content (> ``summarize_over`` chars) is followed by
               a request to summarise it, so a compact trace is stored too

Follow-ups wait in a FIFO queue and are served before new gaps, at most
``followups_per_iteration`` per iteration. The formulator never touches the
network or files: it only builds requests; the chaperone decides.
"""

from __future__ import annotations

import re
from collections import deque
from itertools import count

from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, Gap

__all__ = ["QueryFormulator", "extract_urls"]

# Where a URL starts: http(s):// not glued to a word before it.
_URL_START = re.compile(r"(?i)(?<![A-Za-z0-9+.\-])https?://")
# Characters that end a URL in running text (RFC 3986 appendix C: delimiters around URIs).
_URL_END = frozenset(' \t\r\n\x0b\x0c<>"`{}|\\^')
# Punctuation that ends a sentence rather than a URL.
_TRAILING = ".,;:!?'*"
_CLOSERS = {")": "(", "]": "["}


def _url_at(text: str, start: int) -> tuple[str, str] | None:
    """(URL, authority) beginning at ``text[start]`` (``http(s)://``), or ``None`` if malformed."""
    i = text.index("//", start) + 2
    n = len(text)
    host_start = i
    # Authority, up to / ? # or a delimiter. Brackets (an IP literal, "[::1]") must
    # balance: their colons belong to the host, and an unterminated "[" is no URL.
    square = 0
    while i < n and text[i] not in _URL_END and not text[i].isspace() and text[i] not in "/?#":
        ch = text[i]
        if ch == "[":
            square += 1
        elif ch == "]":
            if square == 0:
                break
            square -= 1
        elif ch == ")":
            break
        i += 1
    authority = text[host_start:i]
    if not authority or square:
        return None
    # Trailing punctuation is stripped, but never into the host's first character
    # or into a bracketed literal.
    keep = host_start + max(1, authority.rfind("]") + 1)
    # Path, query, fragment: brackets and parentheses must balance inside the URL.
    depth = {"(": 0, "[": 0}
    while i < n and text[i] not in _URL_END and not text[i].isspace():
        ch = text[i]
        if ch in depth:
            depth[ch] += 1
        elif ch in _CLOSERS:
            if depth[_CLOSERS[ch]] == 0:
                break
            depth[_CLOSERS[ch]] -= 1
        i += 1
    # Sentence punctuation after the URL is not part of it.
    while i > keep and text[i - 1] in _TRAILING:
        i -= 1
    return text[start:i], authority


_PATH = re.compile(
    r"(?<![\w/.~-])((?:~|\.{1,2})?/?(?:[\w.-]+/)*[\w-][\w.-]*\.(?:txt|md|markdown|json|html?|pdf))\b"
)


def extract_paths(text: str) -> list[str]:
    """Local file names in running text (``notes.md``, ``docs/a.pdf``, ``~/x.txt``), each once.

    Only names with an extension the ingest layer reads; URLs are not paths.
    """
    out: list[str] = []
    for match in _PATH.finditer(text):
        start = match.start(1)
        if "://" in text[max(0, start - 12) : start + 3]:
            continue
        path = match.group(1)
        if path not in out:
            out.append(path)
    return out


def extract_urls(text: str) -> list[str]:
    """http(s) URLs in running text, in order, each once.

    A small URL parser, not a pattern: the authority runs to ``/ ? #`` with its
    brackets balanced, so an IPv6 literal ``[::1]:8080`` is kept whole (never cut
    at its first ``:``) and an unterminated ``[`` is not a URL; the rest runs to
    whitespace or a delimiter, with balanced brackets and no trailing sentence
    punctuation. Nothing is checked for safety here: every URL goes through the
    chaperone's safety filter (the same checks as any other URL, ports and IP
    literals included).
    """
    out: list[str] = []
    for m in _URL_START.finditer(text):
        found = _url_at(text, m.start())
        if found is not None and found[0] not in out:
            out.append(found[0])
    return out


class QueryFormulator:
    """Turn gaps (and follow-ups of answers) into :class:`ChaperoneRequest` objects."""

    def __init__(
        self,
        *,
        session: str = "",
        summarize_over: int = 4000,
        followups_per_iteration: int = 1,
        max_pending: int = 32,
    ) -> None:
        self.session = session
        self.summarize_over = summarize_over
        self.followups_per_iteration = followups_per_iteration
        self._pending: deque[ChaperoneRequest] = deque(maxlen=max_pending)
        self._seen_urls: set[str] = set()
        self._seen_paths: set[str] = set()
        self._ids = count(1)
        self.produced: dict[str, int] = {
            "question": 0,
            "fetch_content": 0,
            "read_local": 0,
            "summarize": 0,
        }

    def _next_id(self) -> str:
        return f"{self.session or 'q'}-{next(self._ids)}"

    def _count(self, req: ChaperoneRequest) -> ChaperoneRequest:
        self.produced[req.type] += 1
        return req

    def from_gap(self, gap: Gap) -> ChaperoneRequest:
        """The request answering one gap."""
        common = {"id": self._next_id(), "topic": gap.topic, "gap_type": gap.type}
        if gap.url:
            self._seen_urls.add(gap.url)
            req = ChaperoneRequest(
                type="fetch_content", url=gap.url, session=self.session, **common
            )
        elif gap.path:
            self._seen_paths.add(gap.path)
            req = ChaperoneRequest(type="read_local", path=gap.path, session=self.session, **common)
        else:
            urls = extract_urls(gap.question)
            paths = extract_paths(gap.question) if gap.type in ("question", "focus") else []
            if urls:
                self._seen_urls.add(urls[0])
                req = ChaperoneRequest(
                    type="fetch_content", url=urls[0], session=self.session, **common
                )
            elif paths:
                # A user names a file ("please read notes/tides.md"): read it; the
                # safety filter decides whether it may be read.
                self._seen_paths.add(paths[0])
                req = ChaperoneRequest(
                    type="read_local", path=paths[0], session=self.session, **common
                )
            else:
                req = ChaperoneRequest(
                    type="question", question=gap.question, session=self.session, **common
                )
        return self._count(req)

    def followups(self) -> list[ChaperoneRequest]:
        """Follow-up requests due this iteration (oldest first)."""
        out: list[ChaperoneRequest] = []
        while self._pending and len(out) < self.followups_per_iteration:
            out.append(self._count(self._pending.popleft()))
        return out

    @property
    def pending(self) -> int:
        return len(self._pending)

    def observe(self, request: ChaperoneRequest, response: ChaperoneResponse) -> None:
        """Queue follow-ups suggested by an answer (cited URLs, long content)."""
        if not response.ok:
            return
        for url in extract_urls(response.content)[:2]:
            if url not in self._seen_urls:
                self._seen_urls.add(url)
                self._pending.append(
                    ChaperoneRequest(
                        id=self._next_id(),
                        type="fetch_content",
                        topic=request.topic,
                        url=url,
                        gap_type="followup",
                        session=self.session,
                    )
                )
        if (
            response.grounded
            and request.type in ("fetch_content", "read_local")
            and len(response.content) > self.summarize_over
        ):
            self._pending.append(
                ChaperoneRequest(
                    id=self._next_id(),
                    type="summarize",
                    topic=request.topic,
                    text=response.content,
                    gap_type="followup",
                    session=self.session,
                )
            )
