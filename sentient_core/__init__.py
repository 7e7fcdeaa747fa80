"""sentient-core: an autonomous-learning core over Numba kernels and LMDB.

The numeric kernels live in the top-level :mod:`kernels` package; this package
holds everything above them (storage, observer, memory, learning loop, CLI).
"""

__version__ = "0.1.0"
