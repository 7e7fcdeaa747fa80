"""Slow, obviously-correct reference implementations (stumpy's ``tests/naive.py``).

Every fast kernel in :mod:`sentient_kernels` is tested against one of these on seeded
random inputs and edge cases. They are kept one file per kernel domain so that
names such as ``mul`` or ``normalize`` do not collide; this module is the index::

    from tests.naive import sedenion
    sedenion.mul(a, b)          # recursive Cayley–Dickson, never the sign table
"""

from tests import naive_bm25 as bm25
from tests import naive_credit as credit
from tests import naive_dot_i8 as dot_i8
from tests import naive_holographic as holographic
from tests import naive_postings as postings
from tests import naive_prsc as prsc
from tests import naive_quantized as quantized
from tests import naive_scorer as scorer
from tests import naive_sedenion as sedenion
from tests import naive_smf as smf
from tests import naive_text as text
from tests import naive_tick as tick

__all__ = [
    "bm25",
    "credit",
    "dot_i8",
    "holographic",
    "postings",
    "prsc",
    "quantized",
    "scorer",
    "sedenion",
    "smf",
    "text",
    "tick",
]
