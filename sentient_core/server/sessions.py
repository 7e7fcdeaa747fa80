"""Panel sessions and one-time login codes: per client, expiring, in memory only.

A browser never holds the server token. It opens a URL carrying a *login
code* (single use, short-lived; ``serve`` prints one, ``sentient learner
login`` mints another) or types the token into the login page once; the server
exchanges either for a *session*: a random id in an HttpOnly, ``SameSite=Strict``
cookie and a CSRF token of its own, which the panel echoes on every
state-changing request. Sessions expire (absolute lifetime and idle time),
are capped in number (the oldest goes first), can be ended one by one
(``POST /panel/logout``) and all die with the process: a restarted server
knows none of them.

Secrets are looked up by their SHA-256 digest, so a lookup's timing says
nothing about the secret.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import msgspec

__all__ = ["LoginCodes", "Session", "Sessions"]


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


class Session(msgspec.Struct, frozen=True, kw_only=True):
    """One client's panel session.

    Attributes
    ----------
    id : str
        The cookie's value.
    csrf : str
        What this client's state-changing requests echo in ``X-CSRF-Token``.
    created, expires : float
        Monotonic seconds.
    """

    id: str
    csrf: str
    created: float
    expires: float


class Sessions:
    """The live sessions of one server.

    Parameters
    ----------
    lifetime_s : float
        A session ends this long after it began, whatever it does.
    idle_s : float
        … or this long after its last request.
    capacity : int
        At most this many at once; a new one ends the least recently used.
    clock : callable
        Monotonic seconds.
    """

    def __init__(
        self,
        lifetime_s: float,
        idle_s: float,
        capacity: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lifetime_s = lifetime_s
        self.idle_s = idle_s
        self.capacity = capacity
        self._clock = clock
        self._lock = threading.Lock()
        # digest of the id -> (session, last seen); least recently used first
        self._live: OrderedDict[bytes, tuple[Session, float]] = OrderedDict()
        self.created = 0
        self.expired = 0
        self.revoked = 0

    def __len__(self) -> int:
        with self._lock:
            self._sweep(self._clock())
            return len(self._live)

    def create(self) -> Session:
        """A new session (the least recently used one ends if the table is full)."""
        now = self._clock()
        session = Session(
            id=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            created=now,
            expires=now + self.lifetime_s,
        )
        with self._lock:
            self._sweep(now)
            while len(self._live) >= self.capacity:
                self._live.popitem(last=False)
                self.revoked += 1
            self._live[_digest(session.id)] = (session, now)
            self.created += 1
        return session

    def get(self, session_id: str) -> Session | None:
        """The live session with this id (its idle clock restarts), else None."""
        if not session_id:
            return None
        key = _digest(session_id)
        now = self._clock()
        with self._lock:
            found = self._live.get(key)
            if found is None:
                return None
            session, seen = found
            if now >= session.expires or now - seen >= self.idle_s:
                del self._live[key]
                self.expired += 1
                return None
            self._live[key] = (session, now)
            self._live.move_to_end(key)
            return session

    def revoke(self, session_id: str) -> bool:
        """End one session; False if it was not live."""
        with self._lock:
            gone = self._live.pop(_digest(session_id), None) is not None
            self.revoked += gone
            return gone

    def revoke_all(self) -> int:
        """End every session (how many were live)."""
        with self._lock:
            n = len(self._live)
            self._live.clear()
            self.revoked += n
            return n

    def _sweep(self, now: float) -> None:
        dead = [
            k
            for k, (s, seen) in self._live.items()
            if now >= s.expires or now - seen >= self.idle_s
        ]
        for k in dead:
            del self._live[k]
        self.expired += len(dead)


class LoginCodes:
    """Single-use login codes that a URL may carry instead of the token.

    Parameters
    ----------
    ttl_s : float
        A code not redeemed within this time is void.
    capacity : int
        At most this many unredeemed codes (the oldest is voided first).
    clock : callable
        Monotonic seconds.
    """

    def __init__(
        self, ttl_s: float, capacity: int = 16, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.capacity = capacity
        self._clock = clock
        self._lock = threading.Lock()
        self._codes: OrderedDict[bytes, float] = OrderedDict()  # digest -> expiry

    def issue(self) -> str:
        """A new code."""
        code = secrets.token_urlsafe(24)
        now = self._clock()
        with self._lock:
            for k in [k for k, exp in self._codes.items() if now >= exp]:
                del self._codes[k]
            while len(self._codes) >= self.capacity:
                self._codes.popitem(last=False)
            self._codes[_digest(code)] = now + self.ttl_s
        return code

    def redeem(self, code: str) -> bool:
        """Whether ``code`` is a live code; it is void from now on either way."""
        if not code:
            return False
        with self._lock:
            expiry = self._codes.pop(_digest(code), None)
        return expiry is not None and self._clock() < expiry
