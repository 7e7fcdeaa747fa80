"""Learning from error (SPEC §5): surprise, credit, source weights, debts, wisdom, the scorer.

Modules
-------
base          the error tree, counters, event publishing
surprise      surprise events: checked construction, the log, source keys
disagreement  the deterministic detector of conflicting values between two passages
domain        the knowledge domain of a question
credit        memory credit with hysteresis → trace strength; the floor; judged outcomes
sources       source weights per (domain, source)
debts         epistemic debts: evidence, resolution, reopening, priority, gaps
wisdom        clusters of surprise and their enforced state machine
factors       the recall scorer's factors and the pure factor matrix
scorer        the bounded learned scorer: training, snapshots, replay
core          :class:`MetaMemory`: every component on one memory, one-transaction observe
loop          :class:`~sentient_core.metamemory.loop.LoopMeta`: what the learner calls
feedback      a user's verdict on a trace (``cli.py feedback``)
recall        :class:`~sentient_core.metamemory.recall.ScoredRecall`: the scorer inside the scan

Each component's module defines its records and the store tables holding them
(:mod:`sentient_core.store.table`): ``EVENTS`` in ``surprise``, ``CREDITS`` and
``FLOORS`` in ``credit``, ``WEIGHTS`` and ``WINDOWS`` in ``sources``, ``DEBTS``
in ``debts``, ``WISDOM`` in ``wisdom``, ``SNAPSHOTS`` in ``scorer``; importing the
package registers them all for :func:`~sentient_core.store.check_integrity`.
The learner feeds it through :mod:`sentient_core.metamemory.loop`.
"""

from sentient_core.metamemory.base import (
    Counts,
    CreditConflictError,
    DebtStateError,
    GateNotMetError,
    IllegalTransitionError,
    MetaMemoryError,
    ReplayError,
    UnknownRecordError,
)
from sentient_core.metamemory.core import MetaMemory, Observation
from sentient_core.metamemory.credit import (
    CreditBook,
    CreditResult,
    CreditSignal,
    record_outcome,
    signals_of,
)
from sentient_core.metamemory.debts import (
    DebtBook,
    DebtEvidence,
    DebtRecord,
    DiscriminatingTest,
    base_priority,
    evidence_support,
    to_gap,
)
from sentient_core.metamemory.disagreement import (
    Disagreement,
    detect_disagreement,
    from_disagreement,
)
from sentient_core.metamemory.domain import GENERAL, domain_of
from sentient_core.metamemory.factors import (
    BASELINE_VERSION,
    FACTOR_NAMES,
    FACTORS,
    Factor,
    FactorContext,
    context_for,
    factor_matrix,
)
from sentient_core.metamemory.scorer import (
    JudgedOutcome,
    ScorerModel,
    ScorerSnapshot,
    batches_of,
    replay,
)
from sentient_core.metamemory.sources import RULES, SourceDecision, SourceRules, SourceWeights
from sentient_core.metamemory.surprise import (
    CAUSES,
    SurpriseBasis,
    SurpriseEvent,
    SurpriseLog,
    check_event,
    make_event,
    source_key,
)
from sentient_core.metamemory.wisdom import TRANSITIONS, WisdomBook, WisdomRecord, WisdomRules

__all__ = [
    "BASELINE_VERSION",
    "CAUSES",
    "FACTORS",
    "FACTOR_NAMES",
    "GENERAL",
    "RULES",
    "TRANSITIONS",
    "Counts",
    "CreditBook",
    "CreditConflictError",
    "CreditResult",
    "CreditSignal",
    "DebtBook",
    "DebtEvidence",
    "DebtRecord",
    "DebtStateError",
    "Disagreement",
    "DiscriminatingTest",
    "Factor",
    "FactorContext",
    "GateNotMetError",
    "IllegalTransitionError",
    "JudgedOutcome",
    "MetaMemory",
    "MetaMemoryError",
    "Observation",
    "ReplayError",
    "ScorerModel",
    "ScorerSnapshot",
    "SourceDecision",
    "SourceRules",
    "SourceWeights",
    "SurpriseBasis",
    "SurpriseEvent",
    "SurpriseLog",
    "UnknownRecordError",
    "WisdomBook",
    "WisdomRecord",
    "WisdomRules",
    "base_priority",
    "batches_of",
    "check_event",
    "context_for",
    "detect_disagreement",
    "domain_of",
    "evidence_support",
    "factor_matrix",
    "from_disagreement",
    "make_event",
    "record_outcome",
    "replay",
    "signals_of",
    "source_key",
    "to_gap",
]
