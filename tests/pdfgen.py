"""Build small, real PDF files for the ingest tests.

pypdf can write PDFs but not lay out text, so :func:`text_pdf` writes a minimal
PDF 1.4 by hand: a catalog, a page tree, the standard Helvetica font and one
content stream per page that draws each line with ``BT /F1 12 Tf x y Td (..) Tj ET``.
The cross-reference table carries the real byte offset of every object, so
strict readers accept the file too.
"""

from __future__ import annotations

import io

from pypdf import PdfWriter

_PAGE_WIDTH = 612
_PAGE_HEIGHT = 792
_LEADING = 16


def _escape(line: str) -> bytes:
    """Encode one line as the body of a PDF literal string ``( ... )``."""
    if not line.isascii():
        raise ValueError(f"pdfgen writes ASCII text only, got {line!r}")
    escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return escaped.encode("ascii")


def _content_stream(lines: list[str]) -> bytes:
    parts = [b"BT", b"/F1 12 Tf", b"72 %d Td" % (_PAGE_HEIGHT - 72), b"%d TL" % _LEADING]
    for number, line in enumerate(lines):
        if number:
            parts.append(b"T*")
        parts.append(b"(" + _escape(line) + b") Tj")
    parts.append(b"ET")
    return b"\n".join(parts) + b"\n"


def text_pdf(pages: list[list[str]]) -> bytes:
    """Return the bytes of a valid PDF whose pages show the given lines.

    Parameters
    ----------
    pages : list of list of str
        One list of ASCII text lines per page.

    Returns
    -------
    bytes
        A complete PDF file with a correct xref table.
    """
    if not pages:
        raise ValueError("a PDF needs at least one page")
    n_pages = len(pages)
    # Object numbers: 1 catalog, 2 page tree, 3 font, then (page, content) pairs.
    page_ids = [4 + 2 * i for i in range(n_pages)]
    bodies: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % pid for pid in page_ids), n_pages),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    for pid, lines in zip(page_ids, pages, strict=True):
        stream = _content_stream(lines)
        bodies[pid] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>"
            % (_PAGE_WIDTH, _PAGE_HEIGHT, pid + 1)
        )
        bodies[pid + 1] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)

    out = io.BytesIO()
    # The binary comment line marks the file as binary for transfer tools.
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(bodies):
        offsets[number] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, bodies[number]))
    xref_at = out.tell()
    size = max(bodies) + 1
    out.write(b"xref\n0 %d\n" % size)
    out.write(b"0000000000 65535 f \n")
    for number in range(1, size):
        out.write(b"%010d 00000 n \n" % offsets[number])
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref_at))
    return out.getvalue()


def encrypted_pdf(source: bytes, user_password: str, owner_password: str = "owner") -> bytes:
    """Return ``source`` re-written by pypdf with RC4-128 encryption.

    RC4 is used because pypdf implements it without optional crypto packages.
    An empty ``user_password`` gives a file anyone can open (owner-only lock).
    """
    writer = PdfWriter(clone_from=io.BytesIO(source))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
