"""What a confined open or read reports instead of a raw :class:`OSError`."""

from __future__ import annotations

import errno

from sentient_core.errors import SentientError

__all__ = [
    "ConfinementError",
    "ConfinementFailed",
    "ConfinementRefused",
    "failed",
    "hardlink_refused",
]


class ConfinementError(SentientError):
    """A confined open or read did not happen.

    Attributes
    ----------
    path : str
        The path asked for (as given, or as reached from the root).
    kind : str
        What happened (see the subclasses).
    reason : str
        In words.
    """

    def __init__(self, path: str, kind: str, reason: str) -> None:
        self.path = path
        self.kind = kind
        self.reason = reason
        super().__init__(reason)

    def __reduce__(self):
        return (type(self), (self.path, self.kind, self.reason))


class ConfinementRefused(ConfinementError):
    """The path must not be read.

    ``kind``: ``outside`` (``..`` above the root, a symlink or path leading
    out), ``symlink`` (symlinks not followed), ``loop`` (too many symlinks),
    ``hardlink`` (the file has other names), ``not_regular`` (a directory,
    FIFO, device or socket), ``changed`` (an entry on the way changed while it
    was being opened).
    """


class ConfinementFailed(ConfinementError):
    """The path is inside but cannot be read: ``missing``, ``permission`` or ``io``."""


def failed(path: str, exc: OSError, what: str) -> ConfinementFailed:
    """The :class:`ConfinementFailed` (missing, permission, io) for ``exc`` while doing ``what``."""
    if exc.errno == errno.ENOENT:
        return ConfinementFailed(path, "missing", f"no such file: {path}")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ConfinementFailed(path, "permission", f"permission denied: {what} {path}")
    return ConfinementFailed(path, "io", f"cannot {what} {path}: {exc.strerror or exc}")


def hardlink_refused(where: str, nlink: int) -> ConfinementRefused:
    """The refusal of a regular file with ``nlink`` names."""
    return ConfinementRefused(
        where,
        "hardlink",
        f"{where} has {nlink} names (hard links); another name may be outside the allowed dir",
    )
