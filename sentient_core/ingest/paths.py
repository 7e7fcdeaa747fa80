"""File names as safe text (see :mod:`sentient_core.safetext`, where the one conversion lives)."""

from sentient_core.safetext import safe_path_text

__all__ = ["safe_path_text"]
