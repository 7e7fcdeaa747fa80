"""The root of every exception sentient-core raises.

Catch :class:`SentientError` to handle anything this package raises on purpose.
Each layer has its own branch (the tree is in the README); bad argument values
and types raise :class:`ArgumentError` / :class:`ArgumentTypeError`, which are
also ``ValueError`` / ``TypeError`` so code written against the standard
exceptions keeps working. (The :mod:`sentient_kernels` package depends only on numpy and
numba and raises plain ``TypeError``/``ValueError`` naming the argument.)
"""

from __future__ import annotations

import errno

__all__ = [
    "EXHAUSTED",
    "ArgumentError",
    "ArgumentTypeError",
    "NotFoundError",
    "ResourceError",
    "SentientError",
    "exhaustion",
]

EXHAUSTED = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large (a file-size limit)",
    errno.EMFILE: "too many open files",
    errno.ENFILE: "too many open files in the system",
    errno.ENOMEM: "out of memory",
    errno.ENOBUFS: "no buffer space available",
}
"""OS errors that mean a resource ran out (retrying at once cannot help)."""


class SentientError(Exception):
    """Base class of every error raised by sentient-core."""


class ArgumentError(SentientError, ValueError):
    """An argument has a bad value (out of range, empty, malformed)."""


class ArgumentTypeError(SentientError, TypeError):
    """An argument has the wrong type."""


class ResourceError(SentientError):
    """A resource ran out or the OS refused a write (disk full, map full, file limits):
    nothing of the failed operation took effect, and retrying at once cannot help."""


class NotFoundError(SentientError, KeyError):
    """A named thing (a trace, a goal, a sub-database, a check) does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def exhaustion(exc: BaseException) -> str | None:
    """One line naming the resource that ran out, if ``exc`` (or its cause) says one did.

    A :class:`ResourceError` (the store's disk-full and map-full errors) says
    so itself; any ``OSError`` whose errno is in :data:`EXHAUSTED` counts too.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ResourceError):
            return str(current)
        if isinstance(current, OSError) and current.errno in EXHAUSTED:
            return f"{EXHAUSTED[current.errno]} ({current.strerror or current})"
        if isinstance(current, MemoryError):
            return "out of memory"
        current = current.__cause__ or current.__context__
    return None
