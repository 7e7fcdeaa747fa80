"""Confined file access: open files under an allowed directory, never outside it.

The one path by which the chaperone's fetcher (:meth:`Fetcher.read_local`), the
offline answerer and the corpus walker reach local files. A path is never
handed to the kernel whole: the allowed directory (the *root*) is opened as a
directory descriptor, and every component below it is opened relative to the
previous one with ``O_NOFOLLOW`` (``O_DIRECTORY`` for directories), so a
directory or file swapped for a symlink between two steps is seen, not
followed. The result is a file descriptor of a regular file whose inode was
reached from the root one directory entry at a time.

Rules
-----
``..``
    Handled here, on the stack of directories already opened (never by the
    kernel, which would follow a directory moved out of the root). ``..`` at
    the root is refused: it never climbs above it.
Symlinks
    Followed only by resolving them here, component by component, and only
    while they stay inside the root: a relative target is resolved from the
    link's directory (its ``..`` handled as above), an absolute target must
    name a path under the root. Anything else is refused. At most
    :data:`MAX_SYMLINKS` links per path; more is a loop (reported once, as a
    loop). ``follow_symlinks=False`` refuses every symlink instead.
Hard links
    A regular file with more than one name (``st_nlink > 1``) may be a hard
    link to a file outside the root; it is refused unless ``allow_hardlinks``.
Proof
    After opening, each directory entry on the way is looked up again
    (``fstatat`` without following) and must still name the inode that was
    opened; otherwise the open is refused as "changed while being opened".
    The final check is made on the descriptor itself (``fstat``): a regular
    file, its link count; after the names are verified a second ``fstat``
    must show the same link count and ``ctime`` (no name added or removed
    meanwhile).
Errors
    Never a raw :class:`OSError`. :class:`ConfinementRefused` (``kind``:
    ``outside``, ``symlink``, ``loop``, ``hardlink``, ``not_regular``,
    ``changed``) when the path must not be read; :class:`ConfinementFailed`
    (``missing``, ``permission``, ``io``) when it cannot be.

The root itself is opened the same way, from ``/`` along its canonical path
(resolved once, when the :class:`ConfinedDir` is made), so a root swapped for a
symlink later is refused too. POSIX only (``dir_fd`` and ``O_NOFOLLOW``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath

from sentient_core.errors import ArgumentError, SentientError

__all__ = [
    "MAX_SYMLINKS",
    "ConfinedDir",
    "ConfinedFile",
    "ConfinementError",
    "ConfinementFailed",
    "ConfinementRefused",
    "expand_path",
    "file_kind",
]

#: Symlinks followed while resolving one path (Linux's own limit is 40).
MAX_SYMLINKS = 40

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_PATH (Linux) opens a directory for traversal with search permission only.
_TRAVERSE = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_LIST = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused right after).
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | _CLOEXEC
# What the kernel says when O_NOFOLLOW meets a symlink (Linux, macOS: ELOOP; BSD: EMLINK).
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})
_READ_CHUNK = 1 << 20


class ConfinementError(SentientError):
    """A confined open or read did not happen.

    Attributes
    ----------
    path : str
        The path asked for (as given, or as reached from the root).
    kind : str
        What happened (see the subclasses).
    reason : str
        In words.
    """

    def __init__(self, path: str, kind: str, reason: str) -> None:
        self.path = path
        self.kind = kind
        self.reason = reason
        super().__init__(reason)

    def __reduce__(self):
        return (type(self), (self.path, self.kind, self.reason))


class ConfinementRefused(ConfinementError):
    """The path must not be read.

    ``kind``: ``outside`` (``..`` above the root, a symlink or path leading
    out), ``symlink`` (symlinks not followed), ``loop`` (too many symlinks),
    ``hardlink`` (the file has other names), ``not_regular`` (a directory,
    FIFO, device or socket), ``changed`` (an entry on the way changed while it
    was being opened).
    """


class ConfinementFailed(ConfinementError):
    """The path is inside but cannot be read: ``missing``, ``permission`` or ``io``."""


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


def file_kind(mode: int) -> str:
    """A file type in words (``directory``, ``FIFO`` …) from ``st_mode``."""
    for test, name in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISREG, "regular file"),
        (stat.S_ISLNK, "symlink"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return "special file"


def _failed(path: str, exc: OSError, what: str) -> ConfinementFailed:
    if exc.errno == errno.ENOENT:
        return ConfinementFailed(path, "missing", f"no such file: {path}")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ConfinementFailed(path, "permission", f"permission denied: {what} {path}")
    return ConfinementFailed(path, "io", f"cannot {what} {path}: {exc.strerror or exc}")


def _hardlink_refused(where: str, nlink: int) -> ConfinementRefused:
    return ConfinementRefused(
        where,
        "hardlink",
        f"{where} has {nlink} names (hard links); another name may be outside the allowed dir",
    )


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


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
            raise _failed(self.path, exc, "read") from None
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
        self._aliases = tuple(PurePosixPath(a).parts for a in aliases)
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
            self._fd = self._open_root()
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
                    still = _same(os.stat(self.path, follow_symlinks=False), os.fstat(self._cached))
                except OSError:
                    still = False
                if still:
                    return os.dup(self._cached)
                os.close(self._cached)
                self._cached = None
            fd = self._open_root()
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

    def _open_root(self) -> int:
        """Open the canonical root path from ``/``, one component at a time, no symlinks."""
        parts = PurePosixPath(self.path).parts
        try:
            fd = os.open(parts[0], _LIST)
        except OSError as exc:
            raise _failed(self.path, exc, "open the allowed dir") from None
        try:
            for i, name in enumerate(parts[1:], start=1):
                flags = _LIST if i == len(parts) - 1 else _TRAVERSE
                try:
                    nfd = os.open(name, flags, dir_fd=fd)
                except OSError as exc:
                    where = os.path.join(*parts[: i + 1])
                    if exc.errno in _SYMLINK_ERRNOS:
                        raise ConfinementRefused(
                            self.path,
                            "changed",
                            f"the allowed dir {self.path} changed: {where} is no longer a "
                            "directory (a symlink or a file now)",
                        ) from None
                    raise _failed(self.path, exc, "open the allowed dir") from None
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    # ------------------------------------------------------------------ paths
    def relative_parts(
        self, path: str | os.PathLike[str] | tuple[str, ...]
    ) -> tuple[str, ...] | None:
        """Components of absolute ``path`` below the root (compared by components), or ``None``.

        ``path`` may also be given as its ``PurePosixPath(...).parts``. Lexical:
        ``..`` is kept (the resolver refuses it at the root), nothing is resolved.
        """
        parts = path if isinstance(path, tuple) else PurePosixPath(os.fspath(path)).parts
        for alias in self._aliases:
            if parts[: len(alias)] == alias:
                return parts[len(alias) :]
        return None

    def _shown(self, names: Sequence[str], name: str = "") -> str:
        return os.path.join(self.path, *names, name) if name else os.path.join(self.path, *names)

    def _link_target(self, target: str, link: str) -> tuple[bool, list[str]]:
        """(restart at root?, components) of a symlink's target; refuses targets outside."""
        if not target:
            raise ConfinementRefused(link, "outside", f"symlink {link} has an empty target")
        if target.startswith("/"):
            rel = self.relative_parts(target)
            if rel is None:
                raise ConfinementRefused(
                    link,
                    "outside",
                    f"symlink {link} points outside the allowed dir {self.path} (to {target})",
                )
            return True, list(rel)
        return False, target.split("/")

    def _resolve(self, root: int, parts: Sequence[str], final: str, follow: bool) -> _Resolved:
        """Walk ``parts`` from the root descriptor.

        ``final`` is ``"file"`` (open the last component as a file), ``"dir"``
        (open it as a listable directory) or ``"stat"`` (stat what it names,
        without opening it). The caller closes the result.
        """
        # Components still to walk, each with the symlink it came from (None: asked for).
        todo: deque[tuple[str, str | None]] = deque((p, None) for p in parts)
        res = _Resolved()
        links = 0
        try:
            while True:
                while todo and todo[-1][0] in ("", "."):
                    todo.pop()  # "a/b/" and "a/b/." name a/b
                if not todo:
                    break
                name, via = todo.popleft()
                if name in ("", "."):
                    continue
                if name == "..":
                    if not res.fds:
                        asked = "/".join(parts)
                        reason = (
                            f"'..' in {asked!r} climbs above the allowed dir {self.path}"
                            if via is None
                            else f"symlink {via} points outside the allowed dir {self.path}"
                        )
                        raise ConfinementRefused(asked if via is None else via, "outside", reason)
                    res.pop()
                    continue
                parent = res.fds[-1] if res.fds else root
                last = not todo
                shown = self._shown(res.names, name)
                opened = -1
                if last and final == "stat":
                    try:
                        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
                    except OSError as exc:
                        raise _failed(shown, exc, "stat") from None
                    if not stat.S_ISLNK(st.st_mode):
                        res.name, res.stat = name, st
                        return res
                else:
                    flags = _FILE if last and final == "file" else _LIST if last else _TRAVERSE
                    try:
                        opened = os.open(name, flags, dir_fd=parent)
                    except OSError as exc:
                        if exc.errno not in _SYMLINK_ERRNOS:
                            raise _failed(shown, exc, "open") from None
                        try:
                            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
                        except OSError as exc2:
                            raise _failed(shown, exc2, "open") from None
                        if not stat.S_ISLNK(st.st_mode):
                            if exc.errno == errno.ENOTDIR:
                                raise ConfinementFailed(
                                    shown,
                                    "missing",
                                    f"no such file: {shown} (a {file_kind(st.st_mode)} "
                                    "is in the way of a directory)",
                                ) from None
                            # ELOOP from something that is no symlink (any more): it changed.
                            raise ConfinementRefused(
                                shown, "changed", f"{shown} changed while it was being opened"
                            ) from None
                if opened < 0:
                    # A symlink: resolve it here, or refuse it.
                    if not follow:
                        raise ConfinementRefused(
                            shown, "symlink", f"{shown} is a symlink (symlinks are not followed)"
                        )
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise ConfinementRefused(
                            shown,
                            "loop",
                            f"symlink loop at {shown} (more than {MAX_SYMLINKS} symlinks)",
                        )
                    try:
                        target = os.readlink(name, dir_fd=parent)
                    except OSError as exc:
                        if exc.errno == errno.EINVAL:  # no longer a symlink: look again
                            todo.appendleft((name, via))
                            continue
                        raise _failed(shown, exc, "read the symlink") from None
                    restart, target_parts = self._link_target(target, shown)
                    if restart:
                        res.close()
                    link = f"{shown} -> {target}"
                    todo.extendleft((p, link) for p in reversed(target_parts))
                    continue
                try:
                    st = os.fstat(opened)
                except OSError as exc:
                    os.close(opened)
                    raise _failed(shown, exc, "stat") from None
                if last and final == "file":
                    res.fd, res.name, res.stat = opened, name, st
                    return res
                res.push(opened, name, st)
            # Out of components on a directory: the root itself, or "a/..".
            if final == "file":
                where = self._shown(res.names)
                raise ConfinementRefused(
                    where, "not_regular", f"{where} is a directory, not a regular file"
                )
            if res.fds:
                res.stat = res.stats[-1]
            else:
                res.stat = os.fstat(root)
            return res
        except BaseException:
            res.close()
            raise

    def _verify(self, root: int, res: _Resolved) -> None:
        """Each entry on the way still names the inode that was opened (else it changed)."""
        parents = [root, *res.fds]
        entries = list(zip(res.names, res.stats, strict=True))
        if res.fd >= 0:
            entries.append((res.name, res.stat))
        for i, (entry, opened) in enumerate(entries):
            try:
                now = os.stat(entry, dir_fd=parents[i], follow_symlinks=False)
            except OSError:
                now = None
            if now is None or not _same(now, opened):
                where = self._shown(res.names[:i], entry)
                raise ConfinementRefused(
                    where, "changed", f"{where} changed while it was being opened"
                )

    def _recheck(self, fd: int, opened: os.stat_result, where: str) -> None:
        """The descriptor's inode did not change between the first ``fstat`` and ``_verify``.

        A hard link can be made and removed while the names are verified: the
        first ``fstat`` may see one name (outside), ``_verify`` the inside name
        added later. Link and unlink change the inode's ``ctime`` (fine-grained
        once it was queried, Linux >= 6.13), so an unchanged ``ctime`` and link
        count on a second ``fstat`` after ``_verify`` mean no name came or went
        in between.
        """
        try:
            now = os.fstat(fd)
        except OSError as exc:
            raise _failed(where, exc, "stat") from None
        if now.st_nlink > 1 and not self.allow_hardlinks:
            raise _hardlink_refused(where, now.st_nlink)
        if self.allow_hardlinks:
            return
        if (now.st_nlink, now.st_ctime_ns) != (opened.st_nlink, opened.st_ctime_ns):
            raise ConfinementRefused(where, "changed", f"{where} changed while it was being opened")

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
            res = self._resolve(root, parts, "file", self.follow_symlinks)
            try:
                st = res.stat
                where = self._shown(res.names, res.name)
                if not stat.S_ISREG(st.st_mode):
                    raise ConfinementRefused(
                        where,
                        "not_regular",
                        f"{where} is a {file_kind(st.st_mode)}, not a regular file",
                    )
                if st.st_nlink > 1 and not self.allow_hardlinks:
                    raise _hardlink_refused(where, st.st_nlink)
                self._verify(root, res)
                self._recheck(res.fd, st, where)
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
            res = self._resolve(root, parts, "stat", self.follow_symlinks)
            try:
                return self._shown(res.names, res.name), res.stat
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
            res = self._resolve(root, parts, "dir", follow=False)
            try:
                self._verify(root, res)
                where = self._shown(res.names)
                out: list[tuple[str, os.stat_result | ConfinementError]] = []
                try:
                    # A listable descriptor of the same directory (the walk may hold O_PATH).
                    fd = os.open(".", _LIST, dir_fd=res.fds[-1] if res.fds else root)
                    if not _same(os.fstat(fd), res.stat):
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
                                out.append((entry.name, _failed(entry.name, exc, "stat")))
                except OSError as exc:
                    raise _failed(where, exc, "list") from None
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
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
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
                raise _failed(self._shown((), name), exc, "write") from None
            finally:
                if tmp:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp, dir_fd=root)


class _Resolved:
    """Directories opened on the way down from the root, and the final object."""

    __slots__ = ("fd", "fds", "name", "names", "stat", "stats")

    def __init__(self) -> None:
        self.fds: list[int] = []
        self.names: list[str] = []
        self.stats: list[os.stat_result] = []
        self.fd = -1
        self.name = ""
        self.stat: os.stat_result | None = None  # type: ignore[assignment]

    def push(self, fd: int, name: str, st: os.stat_result) -> None:
        self.fds.append(fd)
        self.names.append(name)
        self.stats.append(st)

    def pop(self) -> None:
        os.close(self.fds.pop())
        self.names.pop()
        self.stats.pop()

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)
        while self.fds:
            self.pop()
