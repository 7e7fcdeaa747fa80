"""Assemble a learner on a :class:`~sentient_core.core.Core` (what ``cli.py learn`` runs).

Embedded default: no LLM and no network — the chaperone answers from a local
corpus (the incoming dir, any ``--corpus`` dirs and the documentation that
ships with Python) with extractive passages and their sources. With
``llm_url`` the chaperone asks an OpenAI-compatible server instead (and falls
back to the corpus when it fails).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from sentient_core.autonomy.budget import Budget, BudgetCaps
from sentient_core.autonomy.drives import CuriosityDrive, Pursuit
from sentient_core.autonomy.judge import Judge
from sentient_core.integrate import Integrator
from sentient_core.learning.chaperone import Chaperone
from sentient_core.learning.events import EventBus
from sentient_core.learning.fetch import Fetcher
from sentient_core.learning.learner import Learner, LearnerConfig
from sentient_core.learning.llm import LLMClient, LLMConfig
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.safety import SafetyFilter, SafetyPolicy

__all__ = ["build_learner", "incoming_dir"]


def incoming_dir(data_dir: str | os.PathLike[str]) -> Path:
    """The incoming dir of a data directory (created if missing)."""
    path = Path(data_dir) / "incoming"
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_learner(
    core,
    *,
    llm_url: str | None = None,
    llm_model: str | None = None,
    corpus_dirs: Sequence[str | os.PathLike[str]] = (),
    include_python_docs: bool = True,
    config: LearnerConfig | None = None,
    policy: SafetyPolicy | None = None,
    caps: BudgetCaps | None = None,
    events: EventBus | None = None,
    env=os.environ,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    fetcher_options: dict | None = None,
) -> Learner:
    """Wire chaperone, safety filter, budget, judge, drives and events to a core."""
    incoming = incoming_dir(core.data_dir)
    corpus = [Path(d).resolve() for d in corpus_dirs]
    events = events or EventBus(core.store, clock=clock)
    if policy is None:
        policy = SafetyPolicy(
            incoming_dir=str(incoming),
            allowed_read_dirs=(str(incoming), *(str(d) for d in corpus)),
        )

    # The chaperone publishes every refusal (with the request id) on the bus.
    safety = SafetyFilter(policy)
    fetcher = Fetcher(safety, **(fetcher_options or {}))
    llm = None
    if llm_url:
        cfg = LLMConfig(base_url=llm_url, **({"model": llm_model} if llm_model else {}))
        llm = LLMClient(cfg)
    answerer = CorpusAnswerer([incoming, *corpus], include_python_docs=include_python_docs)
    chaperone = Chaperone(safety, fetcher, llm=llm, answerer=answerer, events=events, clock=clock)
    budget = Budget(core.store, caps or BudgetCaps.from_env(env), clock=clock, env=env)
    integrator = Integrator(core.memory, core.observer, kind="learned", importance=0.6)
    return Learner(
        memory=core.memory,
        observer=core.observer,
        integrator=integrator,
        chaperone=chaperone,
        budget=budget,
        judge=Judge(llm=llm),
        drive=CuriosityDrive(),
        pursuit=Pursuit(core.store, clock=clock),
        events=events,
        config=config,
        clock=clock,
        sleep=sleep,
    )
