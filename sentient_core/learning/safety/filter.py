"""The safety filter: every check behind one object, each refusal counted and reported.

:class:`SafetyFilter` counts the refusals of each check (:meth:`SafetyFilter.counters`),
reports them to ``on_refusal``, keeps the per-session file count and the
sliding-window rate limit, checks content type and size, and runs the URL
checks (:mod:`.urls`) and the local-path checks (:mod:`.local`).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable

from sentient_core.confine import ConfinedFile
from sentient_core.errors import NotFoundError
from sentient_core.learning.safety.local import LocalReads
from sentient_core.learning.safety.policy import CHECKS, Refusal, SafetyPolicy
from sentient_core.learning.safety.urls import Resolver, Target, UrlRules, system_resolver

__all__ = ["RefusalCallback", "SafetyFilter"]

#: ``on_refusal(check, reason, subject)``.
RefusalCallback = Callable[[str, str, str], None]


class SafetyFilter:
    """Named safety checks with fire counters.

    Parameters
    ----------
    policy : SafetyPolicy
        What is allowed.
    clock : callable
        Monotonic seconds, for the rate limit (injectable for tests).
    resolver : callable, optional
        ``resolver(host) -> iterable of IP strings``; default :func:`system_resolver`.
    on_refusal : callable, optional
        ``on_refusal(check, reason, subject)`` called for every refusal.
    """

    def __init__(
        self,
        policy: SafetyPolicy,
        *,
        clock: Callable[[], float] = time.monotonic,
        resolver: Resolver | None = None,
        on_refusal: RefusalCallback | None = None,
    ) -> None:
        self.policy = policy
        self._clock = clock
        self._resolver = resolver if resolver is not None else system_resolver
        self.on_refusal = on_refusal
        self._lock = threading.Lock()
        self._fired = dict.fromkeys(CHECKS, 0)
        self._requests: deque[float] = deque()
        self._files = 0
        self._urls = UrlRules(policy, self._resolver)
        self._mime = frozenset(policy.allowed_mime)
        # Each allowed dir resolved once; reads are opened from its descriptor.
        self._local = LocalReads(policy)

    # ------------------------------------------------------------------ registry
    def counters(self) -> dict[str, int]:
        """How many times each check fired (every check listed, zeros included)."""
        with self._lock:
            return dict(self._fired)

    def refuse(self, check: str, reason: str, subject: str = "", inner: str = "") -> Refusal:
        """Count a refusal by ``check``, report it, and return the exception to raise."""
        if check not in CHECKS:
            raise NotFoundError(f"unknown safety check {check!r}")
        with self._lock:
            self._fired[check] += 1
        refusal = Refusal(check, reason, subject, inner)
        if self.on_refusal is not None:
            try:
                self.on_refusal(check, reason, subject)
            except Exception as exc:
                # A failing logger must not turn a refusal into something else.
                raise refusal from exc
        return refusal

    # ------------------------------------------------------------------ URLs
    def check_url(self, url: str) -> Target:
        """Run scheme → userinfo → ip_literal → domain_allowlist; raise the first failure."""
        return self._urls.check_url(url, self.refuse)

    def check_addresses(self, host: str, addresses: Iterable[str]) -> tuple[str, ...]:
        """Refuse unless every address of ``host`` is public; returns them normalised."""
        return self._urls.check_addresses(host, addresses, self.refuse)

    def check_host(self, host: str) -> tuple[str, ...]:
        """Resolve ``host`` and :meth:`check_addresses`; resolver errors (OSError) propagate."""
        return self.check_addresses(host, self._resolver(host))

    def check_redirect(
        self, current: str, location: str, hop: int, seen: Collection[str] = ()
    ) -> tuple[Target, tuple[str, ...]]:
        """Check redirect hop number ``hop`` (1-based) from ``current`` to ``location``.

        Runs every URL check and the address check on the new target; any
        failure is reported as a ``redirect`` refusal naming the inner check.
        Returns the checked target and its addresses. Resolver errors propagate.
        """
        return self._urls.check_redirect(current, location, hop, seen, self.refuse)

    # ------------------------------------------------------------------ content
    def check_mime(self, content_type: str | None) -> str:
        """Refuse a Content-Type off the allow-list; returns the bare media type."""
        media = (content_type or "").split(";", 1)[0].strip().lower()
        if not media:
            raise self.refuse("mime", "no content type given", content_type or "")
        if media not in self._mime:
            raise self.refuse(
                "mime",
                f"content type {media} is not allowed ({', '.join(sorted(self._mime))})",
                content_type or "",
            )
        return media

    def check_size(self, n: int) -> None:
        """Refuse content of more than ``max_bytes`` bytes."""
        if n > self.policy.max_bytes:
            raise self.refuse(
                "max_bytes",
                f"content of {n} bytes or more exceeds the limit of {self.policy.max_bytes} bytes",
                str(n),
            )

    # ------------------------------------------------------------------ quotas
    def files_left(self) -> int:
        """Files that may still be fetched or read in this session."""
        with self._lock:
            return max(0, self.policy.max_files_per_session - self._files)

    def count_file(self) -> None:
        """Count one more file in this session; refuse beyond the per-session limit."""
        with self._lock:
            over = self._files >= self.policy.max_files_per_session
            if not over:
                self._files += 1
        if over:
            limit = self.policy.max_files_per_session
            raise self.refuse(
                "file_count",
                f"the session already has {limit} files (limit {limit})",
                str(limit + 1),
            )

    def new_session(self) -> None:
        """Start a new session: the file count goes back to zero (the rate window stays)."""
        with self._lock:
            self._files = 0

    def check_rate(self) -> None:
        """Record one request; refuse it when the sliding window is already full."""
        now = self._clock()
        window = self.policy.rate_limit_window_s
        with self._lock:
            while self._requests and now - self._requests[0] >= window:
                self._requests.popleft()
            full = len(self._requests) >= self.policy.rate_limit_requests
            if not full:
                self._requests.append(now)
            wait = window - (now - self._requests[0]) if full else 0.0
        if full:
            raise self.refuse(
                "rate_limit",
                f"{self.policy.rate_limit_requests} requests in the last {window:g} s already "
                f"(next slot in {wait:.1f} s)",
                f"{now:.3f}",
            )

    # ------------------------------------------------------------------ local files
    def open_local(self, path: str | os.PathLike[str]) -> ConfinedFile:
        """Open a local file for reading, only inside an allowed dir; close the result.

        ``~`` is expanded; a relative path is taken from the incoming dir. The
        path is mapped to an allowed dir by path components (lexically, or
        after resolving it when it reaches the dir through a symlink) and then
        opened only through :meth:`ConfinedDir.open_file`: from the dir's
        descriptor, component by component, symlinks resolved here and only
        while they stay inside, ``..`` never above the dir, hard links refused
        unless the policy allows them, and every entry on the way checked again
        after the open. What comes back is a descriptor of a regular file whose
        inode was reached inside the dir.

        Raises
        ------
        Refusal
            ``local_path``: outside, under /proc, /sys or /dev, a symlink leading
            out, a symlink loop, a hard link, not a regular file, or changed while
            it was being opened.
        ConfinementFailed
            Inside, but missing or unreadable (the fetcher reports a FetchError).
        """
        return self._local.open(path, self.refuse)
