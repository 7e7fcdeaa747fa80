"""Expand files and folders given on the command line into files to ingest.

Policy
------
* Folders are walked recursively, depth first: a folder's files in name order,
  then its subfolders in name order, so the order is the same on every run.
* Symlinked directories inside a walked folder are not followed (reported as
  skipped). A symlinked file inside a folder is ingested only if its target
  lies inside the same root; otherwise it is skipped. Paths given explicitly
  are used as given, symlinks included: the user named them.
* Names starting with ``.`` inside a walked folder (``.git``, ``.cache``,
  editor files) are skipped and reported once, without descending.
* Every file is yielded at most once (by resolved path).
* Anything not yielded for ingest is reported as a skipped entry with a reason:
  unsupported extension, not found, not a regular file, unreadable folder.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from sentient_core.ingest.extract import SUPPORTED


class WalkEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A file found by :func:`iter_files`.

    Attributes
    ----------
    path : str
        The file's path as reached from the given root (not resolved).
    skip_reason : str or None
        ``None`` for a file to ingest; otherwise why it is skipped.
    """

    path: str
    skip_reason: str | None = None

    @property
    def skipped(self) -> bool:
        """Whether the entry is reported rather than to be ingested."""
        return self.skip_reason is not None


def _inside(path: str, root: str) -> bool:
    # Compare by components so "/data/a-b" is not taken as inside "/data/a".
    return Path(path).is_relative_to(root)


def iter_files(
    paths: Iterable[str | os.PathLike[str]], *, exts: Iterable[str] = SUPPORTED
) -> Iterator[WalkEntry]:
    """Yield the files under ``paths``, and the entries skipped, in a fixed order.

    Parameters
    ----------
    paths : iterable of str or os.PathLike
        Files and folders, walked in the order given.
    exts : iterable of str
        Extensions to ingest, with the dot (compared case-insensitively).

    Yields
    ------
    WalkEntry
        ``skip_reason is None`` for files to ingest, else the reason.
    """
    wanted = frozenset(e.lower() for e in exts)
    seen: set[str] = set()

    def consider(path: str, st: os.stat_result) -> WalkEntry | None:
        if not stat.S_ISREG(st.st_mode):
            return WalkEntry(path, "not a regular file")
        ext = os.path.splitext(path)[1].lower()
        if ext not in wanted:
            return WalkEntry(path, f"unsupported extension '{ext}'" if ext else "no extension")
        real = os.path.realpath(path)
        if real in seen:
            return None
        seen.add(real)
        return WalkEntry(path)

    for given in paths:
        top = os.fspath(given)
        try:
            st = os.stat(top)
        except FileNotFoundError:
            yield WalkEntry(top, "not found" if not os.path.islink(top) else "broken symlink")
            continue
        except OSError as exc:
            yield WalkEntry(top, f"cannot access: {exc.strerror or exc}")
            continue
        if not stat.S_ISDIR(st.st_mode):
            entry = consider(top, st)
            if entry is not None:
                yield entry
            continue
        yield from _walk_folder(top, consider)


def _walk_folder(root: str, consider) -> Iterator[WalkEntry]:
    root_real = os.path.realpath(root)
    # Stack of folders to visit; children pushed in reverse so they pop in name order.
    stack: list[str] = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield WalkEntry(folder, f"cannot read folder: {exc.strerror or exc}")
            continue
        subfolders: list[str] = []
        for entry in entries:
            path = entry.path
            if entry.name.startswith("."):
                yield WalkEntry(path, "hidden entry, not walked")
                continue
            try:
                if entry.is_symlink():
                    result = _symlink_entry(path, root_real, consider)
                    if result is not None:
                        yield result
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(path)
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                yield WalkEntry(path, f"cannot access: {exc.strerror or exc}")
                continue
            result = consider(path, st)
            if result is not None:
                yield result
        # Subfolders are walked after the files of this folder, each in name order.
        stack.extend(reversed(subfolders))


def _symlink_entry(path: str, root_real: str, consider) -> WalkEntry | None:
    try:
        st = os.stat(path)
    except OSError:
        return WalkEntry(path, "broken symlink")
    if stat.S_ISDIR(st.st_mode):
        return WalkEntry(path, "symlinked folder, not followed")
    if not _inside(os.path.realpath(path), root_real):
        return WalkEntry(path, "symlink points outside the folder being ingested")
    return consider(path, st)


__all__ = ["WalkEntry", "iter_files"]
