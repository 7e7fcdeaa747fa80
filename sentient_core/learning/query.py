"""Query formulation: gaps and earlier answers → chaperone requests (SPEC §4).

All four request types are produced:

question       a gap's question (the default)
fetch_content  a gap that names a URL, or an allowed-looking URL cited in an
               earlier answer (followed up once)
read_local     a gap that names a file, or a local file cited as the source of an
               earlier answer (read whole, once)
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

__all__ = ["QueryFormulator"]

_URL = re.compile(r"https?://[^\s<>\"')\]]+")


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
            urls = _URL.findall(gap.question)
            if urls:
                self._seen_urls.add(urls[0])
                req = ChaperoneRequest(
                    type="fetch_content", url=urls[0], session=self.session, **common
                )
            else:
                req = ChaperoneRequest(
                    type="question", question=gap.question, session=self.session, **common
                )
        return self._count(req)

    def followups(self) -> list[ChaperoneRequest]:
        """Follow-up requests due this iteration (oldest first)."""
        out = []
        while self._pending and len(out) < self.followups_per_iteration:
            out.append(self._count(self._pending.popleft()))
        return out

    @property
    def pending(self) -> int:
        return len(self._pending)

    def observe(self, request: ChaperoneRequest, response: ChaperoneResponse) -> None:
        """Queue follow-ups suggested by an answer (cited URLs/files, long content)."""
        if not response.ok:
            return
        for src in response.sources:
            if (
                src.kind == "local"
                and src.ref
                and request.type != "read_local"
                and src.ref not in self._seen_paths
            ):
                self._seen_paths.add(src.ref)
                self._pending.append(
                    ChaperoneRequest(
                        id=self._next_id(),
                        type="read_local",
                        topic=request.topic,
                        path=src.ref,
                        gap_type="followup",
                        session=self.session,
                    )
                )
        for url in _URL.findall(response.content)[:2]:
            url = url.rstrip(".,;:")
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
