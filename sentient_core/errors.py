"""The root of every exception sentient-core raises.

Catch :class:`SentientError` to handle anything this package raises on purpose.
Each layer has its own branch (the tree is in the README); bad argument values
and types raise :class:`ArgumentError` / :class:`ArgumentTypeError`, which are
also ``ValueError`` / ``TypeError`` so code written against the standard
exceptions keeps working. (The :mod:`kernels` package depends only on numpy and
numba and raises plain ``TypeError``/``ValueError`` naming the argument.)
"""

from __future__ import annotations

__all__ = ["ArgumentError", "ArgumentTypeError", "NotFoundError", "SentientError"]


class SentientError(Exception):
    """Base class of every error raised by sentient-core."""


class ArgumentError(SentientError, ValueError):
    """An argument has a bad value (out of range, empty, malformed)."""


class ArgumentTypeError(SentientError, TypeError):
    """An argument has the wrong type."""


class NotFoundError(SentientError, KeyError):
    """A named thing (a trace, a goal, a sub-database, a check) does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""
