"""Walking a path below an allowed directory, one directory entry at a time.

Every component is opened relative to the previous one's descriptor with
``O_NOFOLLOW``; ``..`` is handled on the stack of directories already opened
and symlinks are resolved here, only while they stay inside (the rules of
:mod:`sentient_core.confine`). :func:`open_root` opens the root itself the same
way from ``/``; :meth:`Walker.verify` and :func:`recheck` prove afterwards that
nothing on the way changed.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections import deque
from collections.abc import Sequence
from pathlib import PurePosixPath

from sentient_core.confine.errors import (
    ConfinementFailed,
    ConfinementRefused,
    failed,
    hardlink_refused,
)

__all__ = [
    "CLOEXEC",
    "LIST_FLAGS",
    "MAX_SYMLINKS",
    "Resolved",
    "Walker",
    "dir_barrier",
    "file_kind",
    "open_root",
    "recheck",
    "same",
]

#: Symlinks followed while resolving one path (Linux's own limit is 40).
MAX_SYMLINKS = 40

CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_PATH (Linux) opens a directory for traversal with search permission only.
TRAVERSE_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC
LIST_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused right after).
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | CLOEXEC
# What the kernel says when O_NOFOLLOW meets a symlink (Linux, macOS: ELOOP; BSD: EMLINK).
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})


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


def same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


class Resolved:
    """Directories opened on the way down from the root, and the final object."""

    __slots__ = ("_stat", "fd", "fds", "name", "names", "stats")

    def __init__(self) -> None:
        self.fds: list[int] = []
        self.names: list[str] = []
        self.stats: list[os.stat_result] = []
        self.fd = -1
        self.name = ""
        self._stat: os.stat_result | None = None

    @property
    def stat(self) -> os.stat_result:
        """The final object's stat (set by :meth:`Walker.resolve` before it returns)."""
        if self._stat is None:
            raise RuntimeError("Resolved.stat read before the walk set it")
        return self._stat

    @stat.setter
    def stat(self, st: os.stat_result) -> None:
        self._stat = st

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


def open_root(path: str) -> int:
    """Open the canonical root ``path`` from ``/``, one component at a time, no symlinks."""
    parts = PurePosixPath(path).parts
    try:
        fd = os.open(parts[0], LIST_FLAGS)
    except OSError as exc:
        raise failed(path, exc, "open the allowed dir") from None
    try:
        for i, name in enumerate(parts[1:], start=1):
            flags = LIST_FLAGS if i == len(parts) - 1 else TRAVERSE_FLAGS
            try:
                nfd = os.open(name, flags, dir_fd=fd)
            except OSError as exc:
                where = os.path.join(*parts[: i + 1])
                if exc.errno in _SYMLINK_ERRNOS:
                    raise ConfinementRefused(
                        path,
                        "changed",
                        f"the allowed dir {path} changed: {where} is no longer a "
                        "directory (a symlink or a file now)",
                    ) from None
                raise failed(path, exc, "open the allowed dir") from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


class Walker:
    """Walks paths below one root directory (see the module notes).

    Parameters
    ----------
    path : str
        The root's canonical path (for messages and symlink targets).
    aliases : tuple of tuple of str
        Component tuples of the absolute paths that name the root.
    """

    __slots__ = ("aliases", "path")

    def __init__(self, path: str, aliases: tuple[tuple[str, ...], ...]) -> None:
        self.path = path
        self.aliases = aliases

    def relative_parts(
        self, path: str | os.PathLike[str] | tuple[str, ...]
    ) -> tuple[str, ...] | None:
        """Components of absolute ``path`` below the root (see :meth:`ConfinedDir.relative_parts`)."""
        parts = path if isinstance(path, tuple) else PurePosixPath(os.fspath(path)).parts
        for alias in self.aliases:
            if parts[: len(alias)] == alias:
                return parts[len(alias) :]
        return None

    def shown(self, names: Sequence[str], name: str = "") -> str:
        """The path of ``names``/``name`` below the root, as shown in messages."""
        return os.path.join(self.path, *names, name) if name else os.path.join(self.path, *names)

    def link_target(self, target: str, link: str) -> tuple[bool, list[str]]:
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

    def resolve(self, root: int, parts: Sequence[str], final: str, follow: bool) -> Resolved:
        """Walk ``parts`` from the root descriptor.

        ``final`` is ``"file"`` (open the last component as a file), ``"dir"``
        (open it as a listable directory) or ``"stat"`` (stat what it names,
        without opening it). The caller closes the result.
        """
        # Components still to walk, each with the symlink it came from (None: asked for).
        todo: deque[tuple[str, str | None]] = deque((p, None) for p in parts)
        res = Resolved()
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
                shown = self.shown(res.names, name)
                opened = -1
                if last and final == "stat":
                    try:
                        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
                    except OSError as exc:
                        raise failed(shown, exc, "stat") from None
                    if not stat.S_ISLNK(st.st_mode):
                        res.name, res.stat = name, st
                        return res
                else:
                    flags = (
                        FILE_FLAGS
                        if last and final == "file"
                        else LIST_FLAGS
                        if last
                        else TRAVERSE_FLAGS
                    )
                    try:
                        opened = os.open(name, flags, dir_fd=parent)
                    except OSError as exc:
                        if exc.errno not in _SYMLINK_ERRNOS:
                            raise failed(shown, exc, "open") from None
                        try:
                            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
                        except OSError as exc2:
                            raise failed(shown, exc2, "open") from None
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
                        raise failed(shown, exc, "read the symlink") from None
                    restart, target_parts = self.link_target(target, shown)
                    if restart:
                        res.close()
                    link = f"{shown} -> {target}"
                    todo.extendleft((p, link) for p in reversed(target_parts))
                    continue
                try:
                    st = os.fstat(opened)
                except OSError as exc:
                    os.close(opened)
                    raise failed(shown, exc, "stat") from None
                if last and final == "file":
                    res.fd, res.name, res.stat = opened, name, st
                    return res
                res.push(opened, name, st)
            # Out of components on a directory: the root itself, or "a/..".
            if final == "file":
                where = self.shown(res.names)
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

    def verify(self, root: int, res: Resolved) -> None:
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
            if now is None or not same(now, opened):
                where = self.shown(res.names[:i], entry)
                raise ConfinementRefused(
                    where, "changed", f"{where} changed while it was being opened"
                )


def dir_barrier(parent: int) -> None:
    """Return only after every rename, link or unlink in flight in ``parent`` finished.

    A rename over a hard link drops the victim's link count (and sets its
    ``ctime``) inside the filesystem, but the name keeps pointing at it in the
    dentry cache until the VFS moves the dentry afterwards. Seen in that gap,
    a file reached through an inside name that is about to stop naming it
    shows one link, and :meth:`Walker.verify` still finds it under the inside
    name: 1 read in ~300k escaped that way in ``tests/test_confine.py``'s
    swap race. The directory's lock is held across the whole rename, and a
    lookup of a name not in the dentry cache (a fresh random one, so it never
    is) takes that lock shared: once the lookup returns, no such gap is open
    in ``parent``, and any later change moves the ``ctime`` that
    :func:`recheck` compares.
    """
    probe = ".sentient-barrier-" + secrets.token_hex(8)
    try:
        os.stat(probe, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return  # ENOENT (the lookup, hence the barrier, happened) or any other error
    raise ConfinementRefused(probe, "changed", f"unexpected entry {probe} in the directory")


def recheck(fd: int, opened: os.stat_result, where: str, allow_hardlinks: bool) -> None:
    """The descriptor's inode did not change between the first ``fstat`` and :meth:`Walker.verify`.

    A hard link can be made and removed while the names are verified: the
    first ``fstat`` may see one name (outside), ``verify`` the inside name
    added later. Link and unlink change the inode's ``ctime`` (fine-grained
    once it was queried, Linux >= 6.13), so an unchanged ``ctime`` and link
    count on a second ``fstat`` after ``verify`` mean no name came or went
    in between.
    """
    try:
        now = os.fstat(fd)
    except OSError as exc:
        raise failed(where, exc, "stat") from None
    if now.st_nlink > 1 and not allow_hardlinks:
        raise hardlink_refused(where, now.st_nlink)
    if allow_hardlinks:
        return
    if (now.st_nlink, now.st_ctime_ns) != (opened.st_nlink, opened.st_ctime_ns):
        raise ConfinementRefused(where, "changed", f"{where} changed while it was being opened")
