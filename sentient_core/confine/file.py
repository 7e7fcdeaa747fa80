"""An open regular file that was proved to be inside its allowed directory."""

from __future__ import annotations

import os

from sentient_core.confine.errors import failed
from sentient_core.errors import ArgumentError

__all__ = ["ConfinedFile"]

_READ_CHUNK = 1 << 20


class ConfinedFile:
    """An open regular file, proved to be inside its root. Close it (or use ``with``).

    Attributes
    ----------
    fd : int
        The descriptor (read-only).
    path : str
        Where it is: the root's canonical path joined with the resolved components.
    rel : tuple of str
        The resolved components below the root (no ``..``, no symlinks).
    stat : os.stat_result
        ``fstat`` of the descriptor when it was opened.
    """

    __slots__ = ("fd", "path", "rel", "stat")

    def __init__(self, fd: int, path: str, rel: tuple[str, ...], st: os.stat_result) -> None:
        self.fd = fd
        self.path = path
        self.rel = rel
        self.stat = st

    def read(self, max_bytes: int) -> bytes:
        """Read from the start, at most ``max_bytes + 1`` bytes (one more shows an overflow).

        Raises
        ------
        ConfinementFailed
            ``io`` when the read fails.
        """
        if max_bytes < 0:
            raise ArgumentError(f"max_bytes must be >= 0, got {max_bytes}")
        limit = max_bytes + 1
        chunks: list[bytes] = []
        total = 0
        try:
            while total < limit:
                chunk = os.pread(self.fd, min(_READ_CHUNK, limit - total), total)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        except OSError as exc:
            raise failed(self.path, exc, "read") from None
        return b"".join(chunks)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def __enter__(self) -> ConfinedFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # a forgotten handle must not leak its descriptor
        # No module globals here: at interpreter exit they may already be gone.
        try:  # noqa: SIM105
            self.close()
        except Exception:
            pass
