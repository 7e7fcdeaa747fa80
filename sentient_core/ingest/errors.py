"""Exceptions raised when a file cannot be ingested.

Every error names the file and the reason, so the CLI can print ``str(error)``
as is and skip to the next file::

    IngestError                  base; ``.path`` and ``.reason`` attributes
    ├── UnsupportedFormat        extension is not one we extract
    ├── UnreadableFile           the OS refused: missing, a directory, no permission
    ├── EmptyFile                zero bytes, or no text after extraction
    ├── TooLarge                 above the size cap for formats loaded whole
    ├── MismatchedContent        not what the extension says (binary .txt, .pdf
    │                            without a PDF header, .json that is not JSON,
    │                            HTML whose charset is not a text encoding)
    ├── CorruptFile              the right format but broken (truncated PDF,
    │                            malformed JSON document, HTML nested deeper
    │                            than the parser's limit)
    │   └── ExtractorFailure     the extractor failed in a way nobody foresaw
    │                            (a bug or an unknown kind of damage); the
    │                            original exception is the ``__cause__``
    ├── EncryptedFile            password-protected PDF
    └── TimeBudgetExceeded       extraction ran past the per-file time budget

``str(error)`` shows the path through :func:`~sentient_core.ingest.paths.safe_path_text`,
so a file name that is not valid UTF-8 never breaks printing or storing the
message; ``error.path`` keeps the name as given.
"""

from __future__ import annotations

import os

from sentient_core.errors import SentientError
from sentient_core.ingest.paths import safe_path_text


class IngestError(SentientError):
    """A file could not be turned into text.

    Parameters
    ----------
    path : str or os.PathLike
        The offending file.
    reason : str
        What is wrong with it, in words a user can act on.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{safe_path_text(self.path)}: {reason}")

    def __reduce__(self):
        # Rebuild from (path, reason) so errors survive pickling across processes.
        return (type(self), (self.path, self.reason))


class UnsupportedFormat(IngestError):
    """The file's extension is not one of the supported formats."""


class UnreadableFile(IngestError):
    """The file could not be opened or read (missing, a directory, permissions)."""


class EmptyFile(IngestError):
    """The file has no bytes, or yields no text."""


class TooLarge(IngestError):
    """The file exceeds the size cap for formats that are loaded whole."""


class MismatchedContent(IngestError):
    """The content is not what the extension claims."""


class CorruptFile(IngestError):
    """The content is of the claimed format but damaged or malformed."""


class ExtractorFailure(CorruptFile):
    """The extractor raised an unexpected exception on this file's content.

    A safety net: whatever a parser raises on hostile input, the caller sees an
    :class:`IngestError` naming the file and the run goes on. The fuzz tests
    assert it never fires; if it does, ``__cause__`` holds the original error.
    """


class EncryptedFile(IngestError):
    """The file is encrypted and cannot be opened without a password."""


class TimeBudgetExceeded(IngestError):
    """Extracting the file took longer than the per-file time budget."""


__all__ = [
    "CorruptFile",
    "EmptyFile",
    "EncryptedFile",
    "ExtractorFailure",
    "IngestError",
    "MismatchedContent",
    "TimeBudgetExceeded",
    "TooLarge",
    "UnreadableFile",
    "UnsupportedFormat",
]
