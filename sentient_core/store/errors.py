"""Exceptions raised by :mod:`sentient_core.store`.

Every error names the store path (or the record) and the reason::

    StoreError                      base class; catch this to handle any store failure
    ├── NotAStoreError              path exists but holds something other than a store
    ├── StoreNotFoundError          no store at path and creation not allowed (also FileNotFoundError)
    ├── SchemaVersionError          store or record written by a newer/unknown schema
    ├── CorruptRecordError          a stored record does not decode or violates its bounds
    ├── StoreFullError              the map cannot grow any further (max_map_size reached)
    ├── StoreIOError                the OS refused a write: disk full, file too large, I/O error
    ├── ForkedStoreError            a Store used in a process other than the one that opened it
    ├── StoreClosedError            a Store used after close()
    └── StoreUsageError             API misuse (nested write, resizing while reading, bad shapes)
"""

from __future__ import annotations

from sentient_core.errors import ResourceError, SentientError

__all__ = [
    "CorruptRecordError",
    "ForkedStoreError",
    "NotAStoreError",
    "SchemaVersionError",
    "StoreClosedError",
    "StoreError",
    "StoreFullError",
    "StoreIOError",
    "StoreNotFoundError",
    "StoreUsageError",
]


class StoreError(SentientError):
    """Base class of every error raised by the store."""


class NotAStoreError(StoreError):
    """The path exists and is not empty, but is not a sentient-core store."""


class StoreNotFoundError(StoreError, FileNotFoundError):
    """No store at the path, and the caller did not allow creating one."""


class SchemaVersionError(StoreError):
    """The store or a record has a schema version this code does not understand."""


class CorruptRecordError(StoreError):
    """A stored record could not be decoded or is out of bounds."""


class StoreFullError(StoreError, ResourceError):
    """The memory map reached ``max_map_size`` and a write still does not fit."""


class StoreIOError(StoreError, ResourceError):
    """The operating system refused a write: the disk is full, a file-size limit
    was hit, or an I/O error. Nothing of the failed transaction was committed.

    Attributes
    ----------
    path : str
        The data directory.
    reason : str
        What the OS said.
    free_bytes : int
        Free space on the directory's file system when it failed (-1 if unknown).
    """

    def __init__(self, path: str, reason: str, free_bytes: int = -1) -> None:
        self.path = path
        self.reason = reason
        self.free_bytes = free_bytes
        free = f"{free_bytes / 1e6:.1f} MB free" if free_bytes >= 0 else "free space unknown"
        super().__init__(f"cannot write the store at {path}: {reason} ({free})")

    def __reduce__(self):
        return (type(self), (self.path, self.reason, self.free_bytes))


class ForkedStoreError(StoreError):
    """The Store was opened in another process (it was inherited across ``fork``)."""


class StoreClosedError(StoreError):
    """The Store was used after :meth:`Store.close`."""


class StoreUsageError(StoreError):
    """The API was used in a way that cannot work (e.g. a write inside a write)."""
