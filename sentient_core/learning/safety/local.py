"""Local reads: map a path to one of the policy's allowed dirs and open it there, confined.

The open itself is :meth:`sentient_core.confine.ConfinedDir.open_file` (from
the dir's descriptor, component by component); this module decides which dir
a path belongs to and turns what confinement refuses into ``local_path``
refusals.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path, PurePosixPath

from sentient_core.confine import ConfinedDir, ConfinedFile, ConfinementRefused, expand_path
from sentient_core.errors import ArgumentError
from sentient_core.learning.safety.policy import SafetyPolicy
from sentient_core.learning.safety.urls import Refuse

__all__ = ["LocalReads"]

# Pseudo-filesystems whose files are never content, whatever the allow-list says.
_SYSTEM_ROOTS = (("/", "proc"), ("/", "sys"), ("/", "dev"))


class LocalReads:
    """The allowed read dirs of one :class:`SafetyPolicy`, each resolved once.

    Reads are opened from a dir's descriptor (see :meth:`open`).
    """

    def __init__(self, policy: SafetyPolicy) -> None:
        self.incoming_dir = policy.incoming_dir
        # The outermost dirs come first, so a path under two of them gets the larger one.
        dirs = [
            ConfinedDir(d, allow_hardlinks=policy.allow_hardlinks) for d in policy.allowed_read_dirs
        ]
        self.dirs = tuple(sorted(dirs, key=lambda d: len(Path(d.path).parts)))

    def open(self, path: str | os.PathLike[str], refuse: Refuse) -> ConfinedFile:
        """Open ``path`` inside an allowed dir (see :meth:`SafetyFilter.open_local`)."""
        subject = path if isinstance(path, str) else repr(path)
        try:
            subject = os.fspath(path)
            expanded = expand_path(subject)
        except (ArgumentError, TypeError):
            raise refuse(
                "local_path", "empty path, NUL byte in path, or not a path", repr(subject), ""
            ) from None
        candidate = (
            expanded if os.path.isabs(expanded) else os.path.join(self.incoming_dir, expanded)
        )
        located = self._locate(candidate, subject, refuse)
        if located is None:
            real = None
            # Only a hint for finding the dir (the open below is what is trusted):
            # a path that reaches an allowed dir through a symlink.
            with contextlib.suppress(OSError, ValueError):
                real = os.path.realpath(candidate)
            if real is not None and real != candidate:
                located = self._locate(real, subject, refuse)
        if located is None:
            dirs = ", ".join(d.path for d in self.dirs)
            raise refuse(
                "local_path", f"{subject} is outside the allowed dirs: {dirs}", subject, ""
            )
        root, rel = located
        try:
            return root.open_file(rel)
        except ConfinementRefused as exc:
            raise refuse("local_path", exc.reason, subject, "") from None

    def _locate(
        self, path: str, subject: str, refuse: Refuse
    ) -> tuple[ConfinedDir, tuple[str, ...]] | None:
        """The allowed dir ``path`` is in (by components) and its components below it."""
        parts = PurePosixPath(path).parts
        for root in _SYSTEM_ROOTS:
            if parts[: len(root)] == root:
                shown = "" if path == subject else f" ({path})"
                where = "/".join(root) if len(root) < 2 else "/" + "/".join(root[1:])
                raise refuse(
                    "local_path",
                    f"{subject}{shown} is in system pseudo-filesystem {where}",
                    subject,
                    "",
                )
        for allowed in self.dirs:
            rel = allowed.relative_parts(parts)
            if rel is not None:
                return allowed, rel
        return None
