"""Settings from ``sentient.toml``, the environment and flags (flag > env > file > defaults).

Modules
-------
schema   the sections of the file (msgspec structs with bounds) and the safety rule:
         plain keys only tighten a check, ``unsafe_`` keys loosen one on purpose
load     :func:`load` merges the four layers into an :class:`Effective` that
         remembers where each value came from and builds :class:`LearnerSettings`

Example ``sentient.toml``::

    [learner]
    interval_s = 10
    max_iterations = 50

    [chaperone]
    llm_url = "http://localhost:1234/v1"
    model = "qwen2.5-7b-instruct"

    [safety]
    allowed_domains = ["docs.python.org", "en.wikipedia.org"]

    [server]
    port = 8765
"""

from sentient_core.config.load import CONFIG_NAME, ENV_VARS, Effective, load, log_unsafe
from sentient_core.config.schema import (
    BudgetSection,
    ChaperoneSection,
    ConfigError,
    LearnerSection,
    SafetySection,
    ServerSection,
    Settings,
)

__all__ = [
    "CONFIG_NAME",
    "ENV_VARS",
    "BudgetSection",
    "ChaperoneSection",
    "ConfigError",
    "Effective",
    "LearnerSection",
    "SafetySection",
    "ServerSection",
    "Settings",
    "load",
    "log_unsafe",
]
