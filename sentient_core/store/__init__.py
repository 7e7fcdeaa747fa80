"""Durable storage of sentient-core: one LMDB environment per data directory.

Modules
-------
env        :class:`Store` (open/create, transactions, map growth, traces and links)
records    versioned msgspec records (:class:`TraceRecord`, :class:`LinkRecord`, ...)
codes      float32 code rows in contiguous blocks (append, read_all, read_rows, set_row)
integrity  :func:`check_integrity`
errors     the exception tree rooted at :class:`StoreError`

Typical use::

    with Store.open(path, code_dim=256) as store:
        stored = store.write(lambda txn: store.put_traces(txn, records, codes))
        with store.read() as txn:
            matrix = codes.read_all(txn)
"""

from sentient_core.store import codes
from sentient_core.store.env import (
    DB_NAMES,
    DEFAULT_MAP_SIZE,
    Store,
    Txn,
    default_data_dir,
)
from sentient_core.store.errors import (
    CorruptRecordError,
    ForkedStoreError,
    NotAStoreError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
    StoreFullError,
    StoreNotFoundError,
    StoreUsageError,
)
from sentient_core.store.integrity import IntegrityReport, check_integrity
from sentient_core.store.records import (
    SCHEMA_VERSION,
    Counters,
    LinkRecord,
    RecordCodec,
    StoreMeta,
    TraceRecord,
)

__all__ = [
    "DB_NAMES",
    "DEFAULT_MAP_SIZE",
    "SCHEMA_VERSION",
    "CorruptRecordError",
    "Counters",
    "ForkedStoreError",
    "IntegrityReport",
    "LinkRecord",
    "NotAStoreError",
    "RecordCodec",
    "SchemaVersionError",
    "Store",
    "StoreClosedError",
    "StoreError",
    "StoreFullError",
    "StoreMeta",
    "StoreNotFoundError",
    "StoreUsageError",
    "TraceRecord",
    "Txn",
    "check_integrity",
    "codes",
    "default_data_dir",
]
