"""Memory integration: files → text → chunks → codes → observer → LMDB.

Modules
-------
pipeline   :class:`Integrator`: the staged, timed pipeline behind ``ingest`` and ``profile``
batches    pending chunks made batches, each committed in one transaction on the commit thread
background the commit thread: one batch in flight, in order, its errors raised in the caller
assemble   a batch of chunks made what memory stores: analysed, observed, checked by column
loader     one file read whole, digested, extracted and chunked
ledger     :class:`FileLedger`: per-file records, so ingest is idempotent (an
           unchanged file stores nothing; a changed one supersedes its old traces)
"""

from sentient_core.integrate.ledger import FileLedger
from sentient_core.integrate.pipeline import (
    DEFAULT_BATCH,
    STAGES,
    IngestSummary,
    Integrator,
    Progress,
    SkippedFile,
    StageTimes,
    TextBatch,
)

__all__ = [
    "DEFAULT_BATCH",
    "STAGES",
    "FileLedger",
    "IngestSummary",
    "Integrator",
    "Progress",
    "SkippedFile",
    "StageTimes",
    "TextBatch",
]
