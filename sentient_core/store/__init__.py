"""Durable storage of sentient-core: one LMDB environment per data directory.

Modules
-------
env        :class:`Store`: the LMDB environment, opening/creating it, its sub-databases
transactions  read/write transactions and map growth (the base class of :class:`Store`)
txn        :class:`Txn`, the transaction handle every domain function takes
records    versioned msgspec records (:class:`TraceRecord`, :class:`LinkRecord`, ...)
traces     trace records (append, get, update, iter_range), functions over a Txn
codes      float32 code rows in contiguous blocks (append_rows, read_all, read_rows, set_row)
columns    the trace columns the memory mirror needs, decoded in bulk
content    content digests → the trace holding that text (the same content is stored once)
files      ingested files → their size, byte digest and traces (ingest is idempotent)
terms      each trace's lexical terms (hashed tokens, counts, length), for BM25 recall
links      directed links between traces (put, get, delete, delete_touching, iter_from)
log        append-only logs with sequence keys (events, surprise …)
keyspace   prefixed key spaces inside one sub-database (number and digest keys)
table      typed record tables over a key prefix (the meta-memory's records), their registry
integrity  :func:`check_integrity`
errors     the exception tree rooted at :class:`StoreError`

Every domain module is a set of functions whose first argument is the
transaction; the :class:`Store` only opens environments and runs transactions.

Typical use::

    with Store.open(path, code_dim=256) as store:
        stored = store.write(lambda txn: traces.append(txn, records, rows))
        with store.read() as txn:
            matrix = codes.read_all(txn)
"""

from sentient_core.store import codes, content, files, links, log, table, terms, traces
from sentient_core.store.env import DB_NAMES, DEFAULT_MAP_SIZE, Store
from sentient_core.store.errors import (
    CorruptRecordError,
    ForkedStoreError,
    NotAStoreError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
    StoreFullError,
    StoreIOError,
    StoreNotFoundError,
    StoreUsageError,
)
from sentient_core.store.integrity import IntegrityReport, check_integrity
from sentient_core.store.location import default_data_dir
from sentient_core.store.records import (
    SCHEMA_VERSION,
    Counters,
    LinkRecord,
    RecordCodec,
    StoreMeta,
    TraceRecord,
)
from sentient_core.store.txn import Txn

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
    "StoreIOError",
    "StoreMeta",
    "StoreNotFoundError",
    "StoreUsageError",
    "TraceRecord",
    "Txn",
    "check_integrity",
    "codes",
    "content",
    "default_data_dir",
    "files",
    "links",
    "log",
    "table",
    "terms",
    "traces",
]
