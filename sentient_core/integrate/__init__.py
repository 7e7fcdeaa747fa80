"""Memory integration: files → text → chunks → codes → observer → LMDB.

Modules
-------
pipeline   :class:`Integrator`: the staged, timed pipeline behind ``ingest`` and ``profile``
assemble   a batch of chunks made what memory stores: analysed, observed, checked by column
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
