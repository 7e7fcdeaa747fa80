"""Measuring learning: the ``evaluate`` harness (the top layer besides the CLI).

Modules
-------
qa      Q/A files (``[{"q": ..., "answers": [...]}, ...]``): loading, validation, matching
audit   what a run did, read back from its store and audit log only
run     the modes (ingest, learn, the bm25s peer, the free run), each on a fresh store
report  the metrics as records and their text rendering (definitions there)

Nothing else in :mod:`sentient_core` imports this package except the CLI.
"""

from sentient_core.evaluation.qa import QAFileError, QAItem, contains_answer, load_qa, normalize
from sentient_core.evaluation.report import (
    EvaluationReport,
    FreeRunReport,
    ModeReport,
    format_report,
)
from sentient_core.evaluation.run import evaluate

__all__ = [
    "EvaluationReport",
    "FreeRunReport",
    "ModeReport",
    "QAFileError",
    "QAItem",
    "contains_answer",
    "evaluate",
    "format_report",
    "load_qa",
    "normalize",
]
