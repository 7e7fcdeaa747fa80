"""Exceptions raised by :mod:`sentient_core.store`.

Every error names the store path (or the record) and the reason::

    StoreError                      base class; catch this to handle any store failure
    ├── NotAStoreError              path exists but holds something other than a store
    ├── StoreNotFoundError          no store at path and creation not allowed (also FileNotFoundError)
    ├── SchemaVersionError          store or record written by a newer/unknown schema
    ├── CorruptRecordError          a stored record does not decode or violates its bounds
    ├── StoreFullError              the map cannot grow any further (max_map_size reached)
    ├── ForkedStoreError            a Store used in a process other than the one that opened it
    ├── StoreClosedError            a Store used after close()
    └── StoreUsageError             API misuse (nested write, resizing while reading, bad shapes)
"""

from __future__ import annotations

from sentient_core.errors import SentientError

__all__ = [
    "CorruptRecordError",
    "ForkedStoreError",
    "NotAStoreError",
    "SchemaVersionError",
    "StoreClosedError",
    "StoreError",
    "StoreFullError",
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


class StoreFullError(StoreError):
    """The memory map reached ``max_map_size`` and a write still does not fit."""


class ForkedStoreError(StoreError):
    """The Store was opened in another process (it was inherited across ``fork``)."""


class StoreClosedError(StoreError):
    """The Store was used after :meth:`Store.close`."""


class StoreUsageError(StoreError):
    """The API was used in a way that cannot work (e.g. a write inside a write)."""
