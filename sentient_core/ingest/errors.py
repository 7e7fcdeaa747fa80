"""Exceptions raised when a file cannot be ingested.

Every error names the file and the reason, so the CLI can print ``str(error)``
as is and skip to the next file::

    IngestError                  base; ``.path`` and ``.reason`` attributes
    ├── UnsupportedFormat        extension is not one we extract
    ├── UnreadableFile           the OS refused: missing, a directory, no permission
    ├── EmptyFile                zero bytes, or no text after extraction
    ├── TooLarge                 above the size cap for formats loaded whole
    ├── MismatchedContent        not what the extension says (binary .txt, .pdf
    │                            without a PDF header, .json that is not JSON)
    ├── CorruptFile              the right format but broken (truncated PDF,
    │                            malformed JSON document)
    └── EncryptedFile            password-protected PDF
"""

from __future__ import annotations

import os

from sentient_core.errors import SentientError


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
        super().__init__(f"{self.path}: {reason}")

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


class EncryptedFile(IngestError):
    """The file is encrypted and cannot be opened without a password."""


__all__ = [
    "CorruptFile",
    "EmptyFile",
    "EncryptedFile",
    "IngestError",
    "MismatchedContent",
    "TooLarge",
    "UnreadableFile",
    "UnsupportedFormat",
]
