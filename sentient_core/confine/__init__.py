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

Modules
-------
directory  :class:`ConfinedDir`: the root descriptor, and open/stat/list/replace below it
file       :class:`ConfinedFile`: an open regular file proved to be inside
walk       the component-by-component walk, the root's own open, the proofs afterwards
errors     :class:`ConfinementError` and its two kinds
"""

from sentient_core.confine.directory import ConfinedDir, expand_path
from sentient_core.confine.errors import ConfinementError, ConfinementFailed, ConfinementRefused
from sentient_core.confine.file import ConfinedFile
from sentient_core.confine.walk import MAX_SYMLINKS, file_kind

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
