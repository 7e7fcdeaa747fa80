"""Deprecated alias of :mod:`kernels.config` (the module was renamed).

Kept only until ``sentient_core/memory.py`` imports :mod:`kernels.config`;
new code must import :mod:`kernels.config`.
"""

from kernels.config import CACHE, FASTMATH, PARALLEL, jit

__all__ = ["CACHE", "FASTMATH", "PARALLEL", "jit"]
