"""Where data directories live by default."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_data_dir"]


def default_data_dir() -> Path:
    """The data directory used when none is given.

    Returns
    -------
    pathlib.Path
        ``$SENTIENT_HOME`` if set; else ``$XDG_DATA_HOME/sentient-core`` (if
        that variable is an absolute path, as the XDG spec requires); else
        ``~/.local/share/sentient-core``.
    """
    home = os.environ.get("SENTIENT_HOME", "").strip()
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "sentient-core"
    return Path.home() / ".local" / "share" / "sentient-core"
