"""``evaluate --scenario moved-source``: recipes whose source file moves, demoted and repaired.

On a copy of the corpus, the Q/A set is split by kind into three passes (within
each kind, in file order, questions go round-robin to A, B and C; a kind asked
once goes to A). All passes learn with recipes on, on one store:

1. **before the move** — pass A: recipes are born of its judged successes;
2. **the move** — every file a confirmed recipe is scoped to moves into
   ``moved/`` inside the corpus, except the last one, which moves *out* of the
   corpus and leaves a symlink of its name in ``elsewhere/`` (a file the
   recipe may not read: repairing it would widen its access);
3. **right after the move** — pass B with the repair driver kept out: recipes
   tried on their old files fail and turn advisory;
4. **repair** — one pass of :class:`~sentient_core.learning.repair.RepairDriver`
   (what the learner runs at idle time): diagnoses from the failed runs in the
   audit log, rewrites that stay inside the allowed dirs, reports the rest;
5. **after repair** — pass C: rewritten recipes (drafts) are tried again and
   re-verified — or fail again.

The report gives answer@k of each pass, the recipes demoted, repaired,
re-verified and retired, every diagnosis, and the rewrites that would widen
access (a rewrite whose source resolves outside the corpus copy; 0 is the bound).
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.evaluation.qa import QAItem
from sentient_core.evaluation.second_pass import PassFigures, _figures
from sentient_core.events import RecipeEvent, read_events
from sentient_core.learning.repair import REPAIR_LIMIT, Diagnosis, RepairDriver
from sentient_core.learning.safety import SafetyFilter, SafetyPolicy
from sentient_core.learning.session import incoming_dir
from sentient_core.recipes import RecipeBook, kind_of, layer_counts
from sentient_core.vocab import Source

__all__ = ["MovedSourceReport", "format_moved_source", "run_moved_source", "split3"]

Progress = Callable[[str], None]


class MovedSourceReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The scenario's passes and what became of the recipes (module docstring)."""

    qa_file: str
    k: int
    before: PassFigures
    after_move: PassFigures
    after_repair: PassFigures
    moved: tuple[str, ...]
    """Files moved inside the corpus (``name → moved/name``)."""
    moved_out: tuple[str, ...]
    """Files moved out of the corpus (a symlink of the name left in ``elsewhere/``)."""
    broken: int
    """Recipes scoped to a file that moved (confirmed before the move)."""
    demoted: int
    """Of them, turned advisory in the pass right after the move (the rest were not tried)."""
    superseded: int
    """Of the demoted, retired in that pass because a new recipe of theirs was verified."""
    repaired: int
    needs_access: int
    inconclusive: int
    reverified: int
    """Rewritten recipes verified again on reuse (draft → confirmed) after repair."""
    failed_again: int
    retired: int
    """Retired by the driver after resisting :data:`~sentient_core.learning.repair.REPAIR_LIMIT`
    repairs."""
    widening_rewrites: int
    recipes_end: dict[str, int]
    diagnoses: tuple[Diagnosis, ...]
    seconds: float


def split3(items: Sequence[QAItem]) -> tuple[list[QAItem], list[QAItem], list[QAItem]]:
    """Passes A, B and C (see the module docstring)."""
    by_kind: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        by_kind[kind_of(item.q)].append(i)
    part: dict[int, int] = {}
    for members in by_kind.values():
        for n, i in enumerate(members):
            part[i] = n % 3
    return tuple([it for i, it in enumerate(items) if part[i] == p] for p in range(3))  # type: ignore[return-value]


def _seq(data: Path) -> int:
    with Core(data, durable=False) as core:
        return max((n for n, _ in read_events(core.store)), default=-1)


def _events(data: Path, after: int) -> list[object]:
    with Core(data, durable=False) as core:
        return [e for _, e in read_events(core.store, after)]


def _move(data: Path, corpus: Path, outside: Path) -> tuple[list[str], list[str], set[int]]:
    """Move every file a confirmed recipe is scoped to (see the module docstring); returns
    the files moved in, moved out, and the recipes scoped to them."""
    with Core(data, durable=False) as core:
        scoped = {
            r.id: Path(r.source[len("local:") :])
            for r in RecipeBook(core.store).records(state="confirmed")
            if r.source.startswith("local:")
        }
    files = sorted({p for p in scoped.values() if p.is_file() and p.parent == corpus})
    broken = {r for r, p in scoped.items() if p in files}
    moved: list[str] = []
    out: list[str] = []
    for i, f in enumerate(files):
        if i == len(files) - 1 and len(files) > 1:
            outside.mkdir(parents=True, exist_ok=True)
            target = outside / f.name
            shutil.move(f, target)
            (corpus / "elsewhere").mkdir(exist_ok=True)
            os.symlink(target, corpus / "elsewhere" / f.name)
            out.append(f.name)
        else:
            (corpus / "moved").mkdir(exist_ok=True)
            shutil.move(f, corpus / "moved" / f.name)
            moved.append(f.name)
    return moved, out, broken


def _repair(data: Path, corpus: Path) -> tuple[Diagnosis, ...]:
    """One pass of the driver, built as the learner builds it."""
    incoming = incoming_dir(data)
    policy = SafetyPolicy(
        incoming_dir=str(incoming), allowed_read_dirs=(str(incoming), str(corpus))
    )
    with Core(data, durable=False) as core:
        driver = RepairDriver(
            RecipeBook(core.store),
            core.memory,
            SafetyFilter(policy),
            policy.allowed_read_dirs,
            budget=100,
            source_of=lambda path: Source("local", path).id,
        )
        return driver.run().diagnoses


def run_moved_source(
    items: Sequence[QAItem],
    corpus: str | os.PathLike[str],
    k: int,
    work: Path,
    *,
    iterations_per_question: int = 3,
    progress: Progress | None = None,
    qa_file: str = "",
) -> MovedSourceReport:
    """The scenario in ``work`` (see the module docstring).

    Raises
    ------
    ArgumentError
        No kind of question is asked three times (pass C would be empty).
    """
    from sentient_core.evaluation.run import run_learn

    say = progress or (lambda _: None)
    t0 = time.perf_counter()
    a, b, c = split3(items)
    if not c:
        raise ArgumentError("no kind of question is asked three times: the scenario needs three")
    copy = work / "corpus"
    shutil.copytree(corpus, copy)
    copy = copy.resolve()
    data = work / "data"
    common = {"iterations_per_question": iterations_per_question, "recipes": True}

    say(f"moved-source: pass A, {len(a)} questions, recipes born")
    rep_a = run_learn(a, copy, k, data, session="moved-a", **common)  # type: ignore[arg-type]
    fig_a = _figures(rep_a, _events(data, -1))
    moved, out, broken = _move(data, copy, work / "outside")
    say(f"moved-source: moved {len(moved)} file(s) inside the corpus, {len(out)} out of it")

    seq = _seq(data)
    say(f"moved-source: pass B, {len(b)} questions, right after the move (no repair)")
    rep_b = run_learn(
        b,
        copy,
        k,
        data,
        session="moved-b",
        after_event=seq,
        repair=False,
        **common,  # type: ignore[arg-type]
    )
    ev_b = _events(data, seq)
    fig_b = _figures(rep_b, ev_b)

    say("moved-source: the repair driver")
    diagnoses = _repair(data, copy)

    seq = _seq(data)
    say(f"moved-source: pass C, {len(c)} questions, after repair")
    rep_c = run_learn(c, copy, k, data, session="moved-c", after_event=seq, **common)  # type: ignore[arg-type]
    ev_c = _events(data, seq)
    fig_c = _figures(rep_c, ev_c)

    rewritten = {d.recipe for d in diagnoses if d.applicable}
    c_actions = Counter(
        (e.recipe, e.action) for e in ev_c if isinstance(e, RecipeEvent) and e.recipe in rewritten
    )
    root = str(copy) + os.sep
    widening = sum(
        1
        for d in diagnoses
        if d.applicable
        and d.source is not None
        and not os.path.realpath(d.source[len("local:") :]).startswith(root)
    )
    with Core(data, durable=False) as core, core.store.read() as txn:
        states = layer_counts(txn)
    b_moves = {
        (e.recipe, e.after) for e in ev_b if isinstance(e, RecipeEvent) and e.recipe in broken
    }
    resisted = {
        e.recipe
        for e in ev_c
        if isinstance(e, RecipeEvent) and e.action == "retired" and "resisted" in e.reason
    }
    return MovedSourceReport(
        qa_file=qa_file,
        k=k,
        before=fig_a,
        after_move=fig_b,
        after_repair=fig_c,
        moved=tuple(moved),
        moved_out=tuple(out),
        broken=len(broken),
        demoted=len({r for r, after in b_moves if after == "advisory"}),
        superseded=len({r for r, after in b_moves if after == "retired"}),
        repaired=len(rewritten),
        needs_access=sum(d.cause == "needs_access" for d in diagnoses),
        inconclusive=sum(d.cause in ("inconclusive", "no_failures") for d in diagnoses),
        reverified=len({r for (r, action) in c_actions if action == "verified"}),
        failed_again=len({r for (r, action) in c_actions if action == "failed"}),
        retired=len(resisted),
        widening_rewrites=widening,
        recipes_end=states,
        diagnoses=diagnoses,
        seconds=time.perf_counter() - t0,
    )


def format_moved_source(r: MovedSourceReport) -> str:
    """The report as text."""

    def row(name: str, f: PassFigures) -> str:
        acts = ", ".join(f"{k} {v}" for k, v in f.recipe_actions.items()) or "none"
        return f"  {name:<22} {f.questions:>4} q  answer@{r.k} {f.answer_at_k:.3f}  recipes: {acts}"

    lines = [
        f"moved-source scenario: {r.qa_file} (k={r.k})",
        row("before the move (A)", r.before),
        row("right after it (B)", r.after_move),
        row("after repair (C)", r.after_repair),
        f"  moved inside the corpus: {', '.join(r.moved) or 'none'};"
        f" moved out (symlink left): {', '.join(r.moved_out) or 'none'}",
        f"  recipes scoped to a moved file {r.broken}: demoted {r.demoted} (of them superseded"
        f" by a new verified recipe {r.superseded}, not tried {r.broken - r.demoted});"
        f" repaired {r.repaired} (re-verified {r.reverified}, failed again {r.failed_again}),"
        f" needing access {r.needs_access} (reported, not applied), inconclusive"
        f" {r.inconclusive}, retired after {REPAIR_LIMIT} repairs {r.retired};"
        f" rewrites that widen access: {r.widening_rewrites}",
    ]
    lines += [f"  recipe {d.recipe}: {d.cause}: {d.detail}" for d in r.diagnoses]
    lines.append(f"  recipes at the end: {r.recipes_end}; {r.seconds:.1f} s")
    return "\n".join(lines)
