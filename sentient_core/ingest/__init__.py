"""Ingest: files → text → overlapping chunks → topic and keywords.

This layer reads files and does no storage; of ``sentient_core`` it imports
only the error root and :mod:`sentient_core.confine` (the walker opens folders
through it). Typical use::

    for entry in iter_files(paths):
        if entry.skipped:
            report(entry.path, entry.skip_reason)
            continue
        try:
            pieces = iter_text(entry.path)      # all checks happen here
        except IngestError as err:             # the only error bad content raises
            report(safe_path_text(err.path), err.reason)
            continue
        for chunk in iter_chunks(pieces):
            topic, words = topic_and_keywords(chunk.text)
"""

from sentient_core.ingest.chunk import (
    DEFAULT_OVERLAP,
    DEFAULT_SIZE,
    Chunk,
    chunk_text,
    iter_chunks,
)
from sentient_core.ingest.errors import (
    CorruptFile,
    EmptyFile,
    EncryptedFile,
    ExtractorFailure,
    IngestError,
    MismatchedContent,
    TimeBudgetExceeded,
    TooLarge,
    UnreadableFile,
    UnsupportedFormat,
)
from sentient_core.ingest.extract import (
    DEFAULT_TIME_BUDGET,
    MAX_WHOLE_FILE_BYTES,
    SUPPORTED,
    ExtractedDoc,
    extract_bytes,
    extract_text,
    iter_text,
    kind_of,
    read_bytes,
)
from sentient_core.ingest.keywords import STOP_WORDS, tokenize, topic_and_keywords
from sentient_core.ingest.paths import safe_path_text
from sentient_core.ingest.walk import WalkEntry, iter_files

__all__ = [
    "DEFAULT_OVERLAP",
    "DEFAULT_SIZE",
    "DEFAULT_TIME_BUDGET",
    "MAX_WHOLE_FILE_BYTES",
    "STOP_WORDS",
    "SUPPORTED",
    "Chunk",
    "CorruptFile",
    "EmptyFile",
    "EncryptedFile",
    "ExtractedDoc",
    "ExtractorFailure",
    "IngestError",
    "MismatchedContent",
    "TimeBudgetExceeded",
    "TooLarge",
    "UnreadableFile",
    "UnsupportedFormat",
    "WalkEntry",
    "chunk_text",
    "extract_bytes",
    "extract_text",
    "iter_chunks",
    "iter_files",
    "iter_text",
    "kind_of",
    "read_bytes",
    "safe_path_text",
    "tokenize",
    "topic_and_keywords",
]
