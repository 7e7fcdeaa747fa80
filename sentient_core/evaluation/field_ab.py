"""Does the field steer what is learned? The default offline learner, field gaps on vs off.

``evaluate --scenario field-gaps --free-run N`` runs the default offline learner
N iterations (40 when not given) twice, each on a fresh store from the same
seed: once with SMF-axis gaps mapped onto the topics whose passage loads the
starved axis (:mod:`sentient_core.learning.field_gaps`), once with the old
mapping (the most related unexplored topic), measured by the same
:class:`~sentient_core.learning.field_gaps.FieldGaps` without steering. For
each arm: the SMF-gap questions mapped onto a topic, the share whose passage
loads the axis it was raised for ("loads": its pull on the axis is above the
candidates' mean pull, see the field_gaps module), the axis gaps no candidate
could load, and the SMF's axis entropy before and after the run.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.evaluation.free import learner_settings
from sentient_core.learning.field_gaps import FieldGaps, axis_entropy
from sentient_core.learning.questions import QuestionBook
from sentient_core.learning.session import build_learner
from sentient_core.vocab import GAP_TYPES

__all__ = ["FieldArm", "FieldGapsReport", "format_field_gaps", "run_field_gaps"]


class FieldArm(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One arm of the field-gaps scenario.

    Attributes
    ----------
    steered : bool
        SMF-axis gaps mapped by the field (True) or by relatedness (False).
    mapped : int
        SMF-axis gaps mapped onto a corpus topic.
    loading : int
        Of those, topics whose passage loads the axis.
    share_loading : float or None
        ``loading / mapped``.
    unloadable : int
        Axis gaps for which no candidate loaded the axis (steered arm: the
        relatedness order was kept).
    by_axis : dict
        Mapped gaps per axis.
    smf_answered, smf_asked : int
        The arm's ``smf_imbalance`` questions answered, and all of them, in its book.
    gaps : dict
        Gaps found per type over the run (curiosity's counters).
    entropy_before, entropy_after : float
        The SMF's axis entropy (nats) at the start and the end.
    subjects : tuple of str
        The topics mapped onto, in order.
    """

    steered: bool
    mapped: int
    loading: int
    share_loading: float | None
    unloadable: int
    by_axis: dict[str, int]
    smf_answered: int
    smf_asked: int
    gaps: dict[str, int]
    entropy_before: float
    entropy_after: float
    subjects: tuple[str, ...] = ()


class FieldGapsReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Both arms, and how many mapped subjects they share."""

    iterations: int
    steered: FieldArm
    unsteered: FieldArm
    shared_subjects: int
    seconds: float


def _arm(iterations: int, data_dir: Path, steer: bool, corpus_dirs: tuple[str, ...]) -> FieldArm:
    with Core(data_dir, durable=False) as core:
        before = axis_entropy(core.observer.smf)
        field = FieldGaps(core.observer, steer=steer)
        fired: Counter[str] = Counter()
        settings = learner_settings(
            f"field-{'on' if steer else 'off'}", corpus_dirs, True, iterations
        )
        with build_learner(core, settings) as learner:
            learner.curiosity.field = field  # the same measure in both arms
            learner.run(iterations)
            fired.update(learner.curiosity.fired)
        after = axis_entropy(core.observer.smf)
        smf_qs = [r for r in QuestionBook(core.store).records() if r.gap_type == "smf_imbalance"]
    picks = field.picks
    loading = sum(p.loads for p in picks)
    return FieldArm(
        steered=steer,
        mapped=len(picks),
        loading=loading,
        share_loading=loading / len(picks) if picks else None,
        unloadable=sum(field.unloadable.values()),
        by_axis=dict(Counter(p.axis for p in picks)),
        smf_answered=sum(r.status == "answered" for r in smf_qs),
        smf_asked=len(smf_qs),
        gaps={t: fired.get(t, 0) for t in GAP_TYPES},
        entropy_before=before,
        entropy_after=after,
        subjects=tuple(p.phrase for p in picks),
    )


def run_field_gaps(
    iterations: int,
    work: Path,
    *,
    corpus_dirs: Sequence[str] = (),
    progress: Callable[[str], None] = lambda line: None,
) -> FieldGapsReport:
    """Run both arms (see the module docstring) in ``work``."""
    if not 1 <= iterations <= 400:
        raise ArgumentError(f"the field-gaps scenario runs 1 to 400 iterations, got {iterations}")
    t0 = time.perf_counter()
    dirs = tuple(str(Path(d).resolve()) for d in corpus_dirs)
    arms = []
    for steer in (True, False):
        progress(f"field-gaps: {iterations} iterations, field {'on' if steer else 'off'}")
        arms.append(_arm(iterations, work / ("on" if steer else "off"), steer, dirs))
    on, off = arms
    return FieldGapsReport(
        iterations=iterations,
        steered=on,
        unsteered=off,
        shared_subjects=len(set(on.subjects) & set(off.subjects)),
        seconds=time.perf_counter() - t0,
    )


def format_field_gaps(report: FieldGapsReport) -> str:
    """Both arms side by side."""

    def share(a: FieldArm) -> str:
        return "—" if a.share_loading is None else f"{a.share_loading:.3f}"

    def loadable(a: FieldArm) -> str:
        # The steered arm counts the gaps no candidate loads; they are the same axes
        # in both arms (the same corpus), so both are measured against its count.
        n = a.mapped - report.steered.unloadable
        return "—" if n <= 0 else f"{a.loading / n:.3f}"

    on, off = report.steered, report.unsteered
    rows = [
        ("SMF-axis gaps mapped onto a topic", on.mapped, off.mapped),
        ("  whose passage loads the starved axis", on.loading, off.loading),
        ("  share loading the axis", share(on), share(off)),
        ("  no candidate loads the axis", on.unloadable, off.unloadable),
        ("  share, gaps some candidate loads", loadable(on), loadable(off)),
        ("smf_imbalance questions answered", on.smf_answered, off.smf_answered),
        ("smf_imbalance questions in the book", on.smf_asked, off.smf_asked),
        (
            "axis entropy before (nats)",
            f"{abs(on.entropy_before):.4f}",
            f"{abs(off.entropy_before):.4f}",
        ),
        ("axis entropy after (nats)", f"{on.entropy_after:.4f}", f"{off.entropy_after:.4f}"),
    ]
    lines = [
        f"field-gaps: the default offline learner, {report.iterations} iterations per arm,"
        " fresh stores, same seed",
        f"{'metric':<42}{'field on':>12}{'field off':>12}",
    ]
    lines += [f"{label:<42}{a!s:>12}{b!s:>12}" for label, a, b in rows]
    lines.append(
        f"subjects mapped by both arms: {report.shared_subjects}"
        f" (of {len(set(on.subjects))} and {len(set(off.subjects))})"
    )
    for name, arm in (("field on", on), ("field off", off)):
        axes = ", ".join(f"{k} {v}" for k, v in sorted(arm.by_axis.items()))
        lines.append(f"{name}: mapped by axis: {axes or 'none'}")
    return "\n".join(lines)
