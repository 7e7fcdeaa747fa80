"""A subprocess that swaps directories, files and links under a reader's feet.

Layout made by :func:`race_layout` (``root/incoming`` is the allowed dir)::

    incoming/d/f.txt      dir "d" is swapped for a symlink to outside/d (absolute or relative)
    incoming/p/q/f.txt    dir "p/q" is swapped for a symlink to outside/q (a deeper component)
    incoming/s.txt        file swapped for a symlink to outside/secret.txt
    incoming/h.txt        file swapped for a hard link to outside/secret.txt
    outside/...           every outside file holds SECRET

Each swap cycle puts every hostile entry in place, then every original back
(``rename`` replaces files atomically; a directory comes back after the symlink
is unlinked), so each entry is hostile about half of the time and a reader sees
the inside content, the outside entry or, for a moment, nothing. The swapper runs in its own process (no GIL shared with the
reader) until :meth:`Swapper.stop` or its own time bound, and reports how many
cycles it made.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["INSIDE", "MARKER", "SECRET", "SECRET_WORDS", "Swapper", "race_layout", "swap_loop"]

INSIDE = b"Inside content: the quokkaflux resonator hums at dawn.\n"
SECRET_WORDS = "zanzibarquux vaultkey plinthorium"
#: In every outside file; a passage containing it came from outside.
MARKER = "OUTSIDE-SECRET"
SECRET = f"{MARKER} {SECRET_WORDS} is the outside content.\n".encode()
TARGETS = ("d/f.txt", "p/q/f.txt", "s.txt", "h.txt")


def race_layout(root: Path) -> tuple[Path, list[str]]:
    """Build the layout under ``root``; returns (incoming dir, paths to read)."""
    incoming = root / "incoming"
    outside = root / "outside"
    for d in (incoming / "d", incoming / "p" / "q", outside / "d", outside / "q"):
        d.mkdir(parents=True, exist_ok=True)
    for rel in TARGETS:
        (incoming / rel).write_bytes(INSIDE)
    for rel in ("d/f.txt", "q/f.txt", "secret.txt"):
        (outside / rel).write_bytes(SECRET)
    return incoming, list(TARGETS)


def swap_loop(root: Path, stop_path: Path, max_s: float) -> int:
    """Swap until ``stop_path`` exists or ``max_s`` seconds passed; returns cycles made."""
    incoming = root / "incoming"
    outside = root / "outside"
    os.chdir(incoming)
    d_targets = (str(outside / "d"), "../outside/d")
    q_targets = (str(outside / "q"), "../../outside/q")
    s_targets = (str(outside / "secret.txt"), "../outside/secret.txt")
    secret = str(outside / "secret.txt")
    deadline = time.monotonic() + max_s
    n = 0
    while True:
        if os.path.exists(stop_path) or (n % 256 == 0 and time.monotonic() > deadline):
            return n
        k = n & 1
        try:
            # Phase 1: every entry hostile at once, so each stays hostile for half a cycle.
            os.rename("d", "d.keep")  # directory -> symlink to an outside directory
            os.symlink(d_targets[k], "d")
            os.rename("p/q", "p/q.keep")  # a deeper directory, the same
            os.symlink(q_targets[k], "p/q")
            os.rename("s.txt", "s.keep")  # file -> symlink to an outside file
            os.symlink(s_targets[k], "s.txt")
            os.rename("h.txt", "h.keep")  # file -> hard link to an outside file
            os.link(secret, "h.txt")
            # Phase 2: everything back (files atomically; a directory after its symlink goes).
            os.unlink("d")
            os.rename("d.keep", "d")
            os.unlink("p/q")
            os.rename("p/q.keep", "p/q")
            os.rename("s.keep", "s.txt")
            os.rename("h.keep", "h.txt")
        except OSError as exc:  # pragma: no cover - the reader never modifies the tree
            print(f"swap failed: {exc}", file=sys.stderr)
            return -n
        n += 1


class Swapper:
    """Run :func:`swap_loop` in a subprocess for the duration of a ``with`` block."""

    def __init__(self, root: Path, max_s: float = 600.0) -> None:
        self.root = Path(root)
        self.max_s = max_s
        self._stop = self.root / "stop-swapping"
        self._proc: subprocess.Popen[str] | None = None
        self.cycles = 0

    def __enter__(self) -> Swapper:
        self._stop.unlink(missing_ok=True)
        code = (
            "import sys; from pathlib import Path; from tests.race_swapper import swap_loop; "
            "print(swap_loop(Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])))"
        )
        root_of_tests = str(Path(__file__).resolve().parent.parent)
        env = {**os.environ, "PYTHONPATH": root_of_tests}
        self._proc = subprocess.Popen(
            [sys.executable, "-c", code, str(self.root), str(self._stop), str(self.max_s)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        # Wait until the first cycles ran, so every read really races.
        started = self.root / "incoming" / "d.keep"
        for _ in range(2000):
            if (
                self._proc.poll() is not None
                or started.exists()
                or os.path.islink(self.root / "incoming" / "d")
            ):
                break
            time.sleep(0.005)
        return self

    def stop(self) -> int:
        """Stop the swapper; returns the cycles it made (raises if it failed)."""
        if self._proc is None:
            return self.cycles
        self._stop.touch()
        out, err = self._proc.communicate(timeout=60)
        proc, self._proc = self._proc, None
        if proc.returncode != 0 or not out.strip():
            raise RuntimeError(f"swapper failed (exit {proc.returncode}): {err.strip()}")
        self.cycles = int(out.strip())
        if self.cycles < 0:
            raise RuntimeError(f"swapper failed after {-self.cycles} cycles: {err.strip()}")
        return self.cycles

    def __exit__(self, *exc) -> None:
        if self._proc is not None:
            self._stop.touch()
            try:
                self._proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:  # pragma: no cover
                self._proc.kill()
                self._proc.communicate()
            self._proc = None
