"""A small progress line for long CLI work (stderr; redrawn in place on a terminal).

Hand-written rather than tqdm or rich (both measured): piped to a log, tqdm still
writes a carriage return per update and rich's bar prints only once, at the end (a
cold kernel compile would show nothing for minutes); either would need this class's
non-terminal branch anyway, and each costs ~50 ms of import (rich also pulls in
pygments and markdown-it) against ~5 ms here.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

__all__ = ["ProgressLine"]


class ProgressLine:
    """Render ``[#####.....] 42% label`` lines.

    On a terminal the line is redrawn at most ``interval`` seconds apart; when
    the stream is not a terminal (CI, pipes) a plain line is written at most
    every ``log_interval`` seconds so logs stay short, with no control
    characters (no carriage returns, no escape sequences).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        width: int = 28,
        interval: float = 0.1,
        log_interval: float = 5.0,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width = width
        self.interval = interval if self.tty else log_interval
        self._last = float("-inf")
        self._drawn = False

    def update(self, fraction: float, label: str, *, force: bool = False) -> None:
        """Show progress ``fraction`` in [0, 1] with a label."""
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        f = min(max(fraction, 0.0), 1.0)
        filled = round(f * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        line = f"[{bar}] {f * 100:5.1f}% {label}"
        if self.tty:
            # Cut to the terminal's width: a wrapped line could not be redrawn in place.
            width = shutil.get_terminal_size().columns - 1
            self.stream.write("\r\x1b[2K" + line[:width])
            self._drawn = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def done(self) -> None:
        """End the progress line (a newline on a terminal)."""
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
        self._drawn = False
