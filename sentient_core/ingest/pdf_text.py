"""Text of a PDF: pypdf's text of each page, pages separated by a blank line.

Lenient parsing recovers what it can from damaged files; an encrypted PDF is
opened only when its user password is empty. Whatever pypdf raises on hostile
bytes becomes an :class:`~sentient_core.ingest.errors.IngestError` subclass.
"""

from __future__ import annotations

import io
import logging
import os
import struct
import warnings
import zlib

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError, PyPdfError

from sentient_core.ingest.deadline import Deadline
from sentient_core.ingest.errors import CorruptFile, EncryptedFile, MismatchedContent, TooLarge
from sentient_core.ingest.reading import normalize_newlines

__all__ = ["pdf_text"]

# pypdf reports recoverable damage through the "pypdf" logger; without a handler
# Python's last-resort handler would print it to stderr in the middle of a
# progress bar. A NullHandler silences only that fallback: records still reach
# any handler the application configures on the root logger.
logging.getLogger("pypdf").addHandler(logging.NullHandler())

_PDF_MAGIC = b"%PDF-"


def pdf_text(path: str | os.PathLike[str], data: bytes, deadline: Deadline) -> tuple[str, int]:
    """(text, page count) of the PDF ``data``."""
    # The header may follow a little junk (the spec tolerates it within 1 KiB).
    if _PDF_MAGIC not in data[:1024]:
        raise MismatchedContent(path, "not a PDF (no %PDF- header)")
    try:
        # Lenient parsing recovers what it can; its warnings are not errors of ours.
        # (catch_warnings is process-wide: extract PDFs from one thread at a time.)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = PdfReader(io.BytesIO(data), strict=False)
            deadline.check("PDF opening")
            if reader.is_encrypted:
                _unlock(path, reader)
            steps = 0

            def on_operator(*_args: object) -> None:
                # Called by pypdf for every content-stream operator: the
                # budget is checked inside a page, not only between pages.
                nonlocal steps
                steps += 1
                if not steps & 0x3FF:
                    deadline.check("PDF text")

            texts = []
            for page in reader.pages:
                deadline.check("PDF pages")
                texts.append(page.extract_text(visitor_operand_before=on_operator) or "")
    except FileNotDecryptedError as exc:
        raise EncryptedFile(path, f"encrypted PDF ({exc})") from None
    except LimitReachedError as exc:
        raise TooLarge(path, f"PDF exceeds a parser limit ({exc})") from None
    except NotImplementedError as exc:
        raise CorruptFile(path, f"uses a PDF feature the reader does not support ({exc})") from None
    except (
        PyPdfError,
        ValueError,
        LookupError,
        TypeError,
        AttributeError,
        ArithmeticError,
        AssertionError,
        zlib.error,
        struct.error,
    ) as exc:
        # pypdf raises plain Python errors too on some malformed structures (a
        # huge startxref offset is an OverflowError; the fuzz tests find these),
        # and its own type-narrowing asserts ("assert pdf is not None, 'mypy'")
        # fail on a broken object graph (tests/data/pdf/assert-in-pypdf.pdf).
        raise CorruptFile(path, f"unreadable PDF ({type(exc).__name__}: {exc})") from None
    except RecursionError:
        raise CorruptFile(path, "unreadable PDF (object structure nested too deeply)") from None
    if not texts:
        raise CorruptFile(path, "PDF has no pages")
    text = normalize_newlines("\n\n".join(t.strip("\n") for t in texts))
    return text, len(texts)


def _unlock(path: str | os.PathLike[str], reader: PdfReader) -> None:
    """Open a PDF locked with an empty user password; refuse real passwords."""
    try:
        opened = reader.decrypt("")
    except DependencyError:
        raise EncryptedFile(
            path, "encrypted PDF using AES; install 'cryptography' to open it"
        ) from None
    except NotImplementedError as exc:  # a security handler pypdf does not implement
        raise EncryptedFile(path, f"encrypted PDF ({exc})") from None
    if not opened:
        raise EncryptedFile(path, "encrypted PDF (password required)")
