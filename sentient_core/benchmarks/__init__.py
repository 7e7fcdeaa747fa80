"""Benchmark cases and the same-run runner behind ``sentient bench``.

Ships with the package so an installed ``sentient bench`` works without a
source checkout; the pytest-benchmark suites in the checkout's ``bench/``
import from here. Layering: this package may import :mod:`sentient_kernels` and any
``sentient_core`` module; nothing imports it except ``sentient_core.cli`` and
``bench/``. Case modules are registered in :data:`cases.MODULES`; optional peer
libraries (faiss, river, scikit-learn) in :data:`peers.PEERS`.
"""
