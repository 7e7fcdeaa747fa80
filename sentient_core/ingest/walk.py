"""Expand files and folders given on the command line into files to ingest.

Policy
------
* Folders are walked recursively, depth first: a folder's files in name order,
  then its subfolders in name order, so the order is the same on every run.
* A folder is walked through :class:`sentient_core.confine.ConfinedDir`: listed
  from descriptors opened below the folder one component at a time, never
  through a symlink. Symlinked directories inside it are not followed
  (reported as skipped). A symlinked file inside it is ingested only if its
  target lies inside the same folder (resolved component by component, ``..``
  never above it); otherwise it is skipped. Paths given explicitly are used as
  given, symlinks included: the user named them.
* Names starting with ``.`` inside a walked folder (``.git``, ``.cache``,
  editor files) are skipped and reported once, without descending.
* Every file is yielded at most once (by device and inode), and every skipped
  entry is reported once (a symlink loop named twice, in a folder and
  explicitly, is one report: "symlink loop").
* Files with more than one name (hard links) are yielded unless
  ``allow_hardlinks=False``, which skips them (a hard link may name a file
  outside the folder); the offline answerer walks that way.
* Anything not yielded for ingest is reported as a skipped entry with a reason:
  unsupported extension, not found, broken symlink, symlink loop, not a regular
  file, unreadable folder, changed while being walked. Nothing raises.

Each yielded file carries the folder it was found in (``root``, canonical) and
its components below it (``rel``), so a reader can open exactly that file with
``ConfinedDir(entry.root).open_file(entry.rel)`` instead of trusting the path.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator

import msgspec

from sentient_core.confine import (
    ConfinedDir,
    ConfinementError,
    ConfinementFailed,
    ConfinementRefused,
)
from sentient_core.ingest.extract import SUPPORTED


class WalkEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A file found by :func:`iter_files`.

    Attributes
    ----------
    path : str
        The file's path as reached from the given root (not resolved).
    skip_reason : str or None
        ``None`` for a file to ingest; otherwise why it is skipped.
    root : str
        For a file to ingest: the canonical folder it is confined to (the walked
        folder, or the parent of an explicitly given file).
    rel : tuple of str
        Its components below ``root``.
    """

    path: str
    skip_reason: str | None = None
    root: str = ""
    rel: tuple[str, ...] = ()

    @property
    def skipped(self) -> bool:
        """Whether the entry is reported rather than to be ingested."""
        return self.skip_reason is not None


_LOOP = "symlink loop (too many levels of symbolic links)"


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return _LOOP
    return f"cannot access: {exc.strerror or exc}"


def iter_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    exts: Iterable[str] = SUPPORTED,
    allow_hardlinks: bool = True,
) -> Iterator[WalkEntry]:
    """Yield the files under ``paths``, and the entries skipped, in a fixed order.

    Parameters
    ----------
    paths : iterable of str or os.PathLike
        Files and folders, walked in the order given (``~`` expanded).
    exts : iterable of str
        Extensions to ingest, with the dot (compared case-insensitively).
    allow_hardlinks : bool
        Yield files that have more than one name; ``False`` skips them.

    Yields
    ------
    WalkEntry
        ``skip_reason is None`` for files to ingest, else the reason.
    """
    wanted = frozenset(e.lower() for e in exts)
    seen: set[tuple[int, int]] = set()  # files yielded (dev, ino)
    reported: set[object] = set()  # skipped entries already reported

    def skip(path: str, reason: str, key: object = None) -> WalkEntry | None:
        key = ("path", os.path.abspath(path)) if key is None else key
        if key in reported:
            return None
        reported.add(key)
        return WalkEntry(path, reason)

    def consider(
        path: str, st: os.stat_result, root: str, rel: tuple[str, ...], key: object
    ) -> WalkEntry | None:
        if not stat.S_ISREG(st.st_mode):
            return skip(path, "not a regular file", key)
        ext = os.path.splitext(path)[1].lower()
        if ext not in wanted:
            return skip(path, f"unsupported extension '{ext}'" if ext else "no extension", key)
        if st.st_nlink > 1 and not allow_hardlinks:
            return skip(path, f"hard link ({st.st_nlink} names; another may be outside)", key)
        ident = (st.st_dev, st.st_ino)
        if ident in seen:
            return None
        seen.add(ident)
        return WalkEntry(path, None, root, rel)

    for given in paths:
        top = os.fspath(given)
        try:
            expanded = os.path.expanduser(top)
            lst = os.lstat(expanded)
        except FileNotFoundError:
            entry = skip(top, "not found")
        except (OSError, ValueError) as exc:
            reason = _os_reason(exc) if isinstance(exc, OSError) else f"bad path: {exc}"
            entry = skip(top, reason)
        else:
            key = (lst.st_dev, lst.st_ino)
            st = lst
            entry = None
            if stat.S_ISLNK(lst.st_mode):
                try:
                    st = os.stat(expanded)
                except FileNotFoundError:
                    entry = skip(top, "broken symlink", key)
                except OSError as exc:
                    entry = skip(top, _os_reason(exc), key)
            if entry is None:
                if stat.S_ISDIR(st.st_mode):
                    yield from _walk_folder(top, expanded, consider, skip, allow_hardlinks)
                    continue
                # The user named this file: confine it to the folder it really is in.
                real = os.path.realpath(expanded)
                entry = consider(top, st, os.path.dirname(real), (os.path.basename(real),), key)
        if entry is not None:
            yield entry


def _walk_folder(top: str, expanded: str, consider, skip, allow_hardlinks: bool):
    try:
        folder = ConfinedDir(expanded, allow_hardlinks=allow_hardlinks)
        folder.__enter__()
    except ConfinementError as exc:
        entry = skip(top, f"cannot read folder: {exc.reason}")
        if entry is not None:
            yield entry
        return
    try:
        # Folders to visit, as components below the root; children pushed in
        # reverse so they pop in name order.
        stack: list[tuple[str, ...]] = [()]
        while stack:
            rel = stack.pop()
            here = os.path.join(top, *rel)
            try:
                entries = folder.list_dir(rel)
            except ConfinementError as exc:
                entry = skip(here, f"cannot read folder: {exc.reason}")
                if entry is not None:
                    yield entry
                continue
            subfolders: list[tuple[str, ...]] = []
            for name, st in entries:
                path = os.path.join(here, name)
                if isinstance(st, ConfinementError):
                    entry = skip(path, f"cannot access: {st.reason}")
                    if entry is not None:
                        yield entry
                    continue
                key = (st.st_dev, st.st_ino)
                if name.startswith("."):
                    entry = skip(path, "hidden entry, not walked", key)
                elif stat.S_ISLNK(st.st_mode):
                    entry = _symlink_entry(folder, (*rel, name), path, key, consider, skip)
                elif stat.S_ISDIR(st.st_mode):
                    subfolders.append((*rel, name))
                    continue
                else:
                    entry = consider(path, st, folder.path, (*rel, name), key)
                if entry is not None:
                    yield entry
            # Subfolders are walked after the files of this folder, each in name order.
            stack.extend(reversed(subfolders))
    finally:
        folder.__exit__(None, None, None)


def _symlink_entry(folder: ConfinedDir, rel, path: str, key, consider, skip):
    try:
        _, st = folder.stat(rel)
    except ConfinementRefused as exc:
        if exc.kind == "outside":
            # Skipped either way; only the reason depends on whether the target exists.
            try:
                target = os.stat(path)
            except FileNotFoundError:
                return skip(path, "broken symlink", key)
            except OSError:
                target = None
            if target is not None and stat.S_ISDIR(target.st_mode):
                return skip(path, "symlinked folder, not followed", key)
            return skip(path, "symlink points outside the folder being ingested", key)
        if exc.kind == "loop":
            return skip(path, _LOOP, key)
        return skip(path, exc.reason, key)
    except ConfinementFailed as exc:
        if exc.kind == "missing":
            return skip(path, "broken symlink", key)
        return skip(path, f"cannot access: {exc.reason}", key)
    if stat.S_ISDIR(st.st_mode):
        return skip(path, "symlinked folder, not followed", key)
    return consider(path, st, folder.path, rel, key)


__all__ = ["WalkEntry", "iter_files"]
