"""The public face of confinement: :class:`ConfinedDir`, an allowed directory.

It holds the root's descriptor (kept, or opened per call) and opens, stats,
lists and replaces files below it through :class:`~.walk.Walker`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath

from sentient_core.confine.errors import (
    ConfinementError,
    ConfinementRefused,
    failed,
    hardlink_refused,
)
from sentient_core.confine.file import ConfinedFile
from sentient_core.confine.walk import (
    CLOEXEC,
    LIST_FLAGS,
    Walker,
    dir_barrier,
    file_kind,
    open_root,
    recheck,
    same,
)
from sentient_core.errors import ArgumentError

__all__ = ["ConfinedDir", "expand_path"]


def expand_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a string with a leading ``~`` / ``~user`` expanded.

    Raises
    ------
    ArgumentError
        Empty, or contains a NUL byte.
    """
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text or "\x00" in text:
        raise ArgumentError(f"path must be non-empty without NUL bytes, got {text!r}")
    return os.path.expanduser(text)


class ConfinedDir:
    """An allowed directory: open, list and stat paths below it, never outside it.

    Parameters
    ----------
    path : str or os.PathLike
        The directory (``~`` expanded, then resolved once to its canonical path).
    follow_symlinks : bool
        Follow symlinks whose target stays inside (resolved here, component by
        component); ``False`` refuses every symlink.
    allow_hardlinks : bool
        Read regular files that have more than one name.

    Use as a context manager to hold the root descriptor open across many
    calls (the walker); without it, each call opens (and closes) the root.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        follow_symlinks: bool = True,
        allow_hardlinks: bool = False,
    ) -> None:
        expanded = expand_path(path)
        self.path = os.path.realpath(expanded)
        self.follow_symlinks = follow_symlinks
        self.allow_hardlinks = allow_hardlinks
        aliases = [self.path]
        absolute = os.path.abspath(expanded)
        # The path as configured also names the root (a symlink's absolute target
        # may use it), but only if it really leads there.
        if absolute != self.path and os.path.realpath(absolute) == self.path:
            aliases.append(absolute)
        self._walker = Walker(self.path, tuple(PurePosixPath(a).parts for a in aliases))
        self._fd: int | None = None
        self._depth = 0
        # A root descriptor kept between calls made outside a ``with`` block; each
        # call gets a dup of it, after checking it is still the dir at self.path.
        self._cached: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ConfinedDir({self.path!r})"

    # ------------------------------------------------------------------ root descriptor
    def __enter__(self) -> ConfinedDir:
        if self._depth == 0:
            self._fd = open_root(self.path)
        self._depth += 1
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    @contextlib.contextmanager
    def _root(self) -> Iterator[int]:
        if self._fd is not None:
            yield self._fd
            return
        fd = self._cached_root()
        try:
            yield fd
        finally:
            os.close(fd)

    def _cached_root(self) -> int:
        """A new descriptor of the root: a dup of the kept one while it is still the dir there."""
        with self._lock:
            if self._cached is not None:
                try:
                    still = same(os.stat(self.path, follow_symlinks=False), os.fstat(self._cached))
                except OSError:
                    still = False
                if still:
                    return os.dup(self._cached)
                os.close(self._cached)
                self._cached = None
            fd = open_root(self.path)
            with contextlib.suppress(OSError):
                self._cached = os.dup(fd)
            return fd

    def close(self) -> None:
        """Close the kept root descriptor (the next call opens the root again)."""
        with self._lock:
            if self._cached is not None:
                fd, self._cached = self._cached, None
                os.close(fd)

    def __del__(self) -> None:
        try:  # noqa: SIM105 - no module globals at interpreter exit
            self.close()
        except Exception:
            pass

    # ------------------------------------------------------------------ paths
    def relative_parts(
        self, path: str | os.PathLike[str] | tuple[str, ...]
    ) -> tuple[str, ...] | None:
        """Components of absolute ``path`` below the root (compared by components), or ``None``.

        ``path`` may also be given as its ``PurePosixPath(...).parts``. Lexical:
        ``..`` is kept (the resolver refuses it at the root), nothing is resolved.
        """
        return self._walker.relative_parts(path)

    @staticmethod
    def _parts(rel: str | os.PathLike[str] | Sequence[str]) -> tuple[str, ...]:
        if isinstance(rel, (str, os.PathLike)):
            text = os.fspath(rel)
            if not isinstance(text, str) or "\x00" in text or text.startswith("/"):
                raise ArgumentError(f"expected a relative path without NUL bytes, got {text!r}")
            return tuple(text.split("/"))
        parts = tuple(rel)
        if any(not isinstance(p, str) or "/" in p or "\x00" in p for p in parts):
            raise ArgumentError(f"path components must be names without '/' or NUL: {parts!r}")
        return parts

    # ------------------------------------------------------------------ public
    def open_file(self, rel: str | os.PathLike[str] | Sequence[str]) -> ConfinedFile:
        """Open the regular file at ``rel`` (a path relative to the root, or its components).

        Raises
        ------
        ConfinementRefused
            It leads outside, is a symlink loop, a hard link (unless allowed),
            not a regular file, or changed while being opened.
        ConfinementFailed
            Missing, permission denied, I/O error.
        """
        parts = self._parts(rel)
        with self._root() as root:
            res = self._walker.resolve(root, parts, "file", self.follow_symlinks)
            try:
                st = res.stat
                where = self._walker.shown(res.names, res.name)
                if not stat.S_ISREG(st.st_mode):
                    raise ConfinementRefused(
                        where,
                        "not_regular",
                        f"{where} is a {file_kind(st.st_mode)}, not a regular file",
                    )
                if st.st_nlink > 1 and not self.allow_hardlinks:
                    raise hardlink_refused(where, st.st_nlink)
                if not self.allow_hardlinks:
                    dir_barrier(res.fds[-1] if res.fds else root)
                self._walker.verify(root, res)
                recheck(res.fd, st, where, self.allow_hardlinks)
                rel_parts = (*res.names, res.name)
                fd, res.fd = res.fd, -1
            finally:
                res.close()
        return ConfinedFile(fd, where, rel_parts, st)

    def stat(self, rel: str | os.PathLike[str] | Sequence[str]) -> tuple[str, os.stat_result]:
        """(path, stat) of what ``rel`` names, symlinks inside the root followed.

        Nothing is opened (a FIFO or device is just reported); the answer is
        advice only: read through :meth:`open_file`.
        """
        parts = self._parts(rel)
        with self._root() as root:
            res = self._walker.resolve(root, parts, "stat", self.follow_symlinks)
            try:
                return self._walker.shown(res.names, res.name), res.stat
            finally:
                res.close()

    def list_dir(
        self, rel: str | os.PathLike[str] | Sequence[str] = ()
    ) -> list[tuple[str, os.stat_result | ConfinementError]]:
        """Entries of the directory at ``rel`` (no symlink followed on the way), sorted by name.

        Each entry comes with its own ``lstat`` (a symlink is reported as a
        symlink), or with the error that prevented it (it vanished meanwhile).
        """
        parts = self._parts(rel)
        with self._root() as root:
            res = self._walker.resolve(root, parts, "dir", follow=False)
            try:
                self._walker.verify(root, res)
                where = self._walker.shown(res.names)
                out: list[tuple[str, os.stat_result | ConfinementError]] = []
                try:
                    # A listable descriptor of the same directory (the walk may hold O_PATH).
                    fd = os.open(".", LIST_FLAGS, dir_fd=res.fds[-1] if res.fds else root)
                    if not same(os.fstat(fd), res.stat):
                        os.close(fd)
                        raise ConfinementRefused(
                            where, "changed", f"{where} changed while it was being opened"
                        )
                    res.push(fd, "", res.stat)  # closed with the walk
                    with os.scandir(fd) as it:
                        for entry in it:
                            try:
                                out.append((entry.name, entry.stat(follow_symlinks=False)))
                            except OSError as exc:
                                out.append((entry.name, failed(entry.name, exc, "stat")))
                except OSError as exc:
                    raise failed(where, exc, "list") from None
            finally:
                res.close()
        out.sort(key=lambda item: item[0])
        return out

    def replace_file(self, name: str, data: bytes, mode: int = 0o600) -> None:
        """Write ``data`` as the file ``name`` directly in the root, replacing what is there.

        A temp file is created next to it (``O_CREAT | O_EXCL | O_NOFOLLOW``),
        written, synced and renamed over ``name``: an entry planted at ``name``
        (a symlink, say) is replaced, never written through.
        """
        if not name or name in (".", "..") or "/" in name or "\x00" in name:
            raise ArgumentError(f"name must be a plain file name, got {name!r}")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | CLOEXEC
        with self._root() as root:
            tmp = ""
            try:
                for _ in range(100):
                    tmp = f".{name}.{secrets.token_hex(8)}.part"
                    try:
                        fd = os.open(tmp, flags, mode, dir_fd=root)
                        break
                    except FileExistsError:
                        continue
                else:  # pragma: no cover - 100 collisions of 64 random bits
                    raise FileExistsError(errno.EEXIST, "no free temp name", name)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, name, src_dir_fd=root, dst_dir_fd=root)
                tmp = ""
            except OSError as exc:
                raise failed(self._walker.shown((), name), exc, "write") from None
            finally:
                if tmp:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp, dir_fd=root)
