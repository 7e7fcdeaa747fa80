"""sentient-core: an autonomous-learning core over Numba kernels and LMDB.

The public API::

    from sentient_core import Core, Integrator, build_learner, LearnerSettings, SentientError

:class:`Core` opens a data directory (store, holographic memory, observer);
:class:`Integrator` turns files and texts into traces; :func:`build_learner`
wires the chaperone-gated learning loop onto a core from one frozen
:class:`LearnerSettings` record (with :class:`LearnerConfig`, :class:`LLMConfig`,
:class:`SafetyPolicy`, :class:`BudgetCaps` and :class:`FetcherSettings` inside).
Every exception the package raises derives from :class:`SentientError`.

The numeric kernels live in the top-level :mod:`sentient_kernels` package. Names are
imported on first use, so ``import sentient_core`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "ArgumentError": "sentient_core.errors",
    "BudgetCaps": "sentient_core.autonomy.budget",
    "Core": "sentient_core.core",
    "FetcherSettings": "sentient_core.learning.session",
    "HolographicMemory": "sentient_core.memory",
    "Integrator": "sentient_core.integrate",
    "LLMConfig": "sentient_core.learning.llm",
    "Learner": "sentient_core.learning.learner",
    "LearnerConfig": "sentient_core.learning.learner",
    "LearnerSettings": "sentient_core.learning.session",
    "SafetyPolicy": "sentient_core.learning.safety",
    "SentientError": "sentient_core.errors",
    "build_learner": "sentient_core.learning.session",
}

__all__ = [
    "ArgumentError",
    "BudgetCaps",
    "Core",
    "FetcherSettings",
    "HolographicMemory",
    "Integrator",
    "LLMConfig",
    "Learner",
    "LearnerConfig",
    "LearnerSettings",
    "SafetyPolicy",
    "SentientError",
    "__version__",
    "build_learner",
]

if TYPE_CHECKING:
    from sentient_core.autonomy.budget import BudgetCaps
    from sentient_core.core import Core
    from sentient_core.errors import ArgumentError, SentientError
    from sentient_core.integrate import Integrator
    from sentient_core.learning.learner import Learner, LearnerConfig
    from sentient_core.learning.llm import LLMConfig
    from sentient_core.learning.safety import SafetyPolicy
    from sentient_core.learning.session import FetcherSettings, LearnerSettings, build_learner
    from sentient_core.memory import HolographicMemory


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sentient_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
