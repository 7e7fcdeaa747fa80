"""Skill self-repair: an advisory recipe diagnosed from its own failed runs, rewritten, never widened.

A recipe that failed its verification on reuse is advisory
(:mod:`sentient_core.recipes`). At idle time — after a reflection, when the
loop does its housekeeping — :class:`RepairDriver` takes the advisory recipes
(oldest first, at most ``budget`` rewrites a pass: its own budget line) and for
each one:

1. **Reads its failed runs from the audit log**: the ``recipe`` events that
   failed it since its last rewrite, and the judge's verdict (gate, reason) on
   each of those requests. No failed run on record: nothing to diagnose from.
2. **Diagnoses deterministically** (no model is asked):

   * its source is a local file and the file still holds the passage the recipe
     was born of (a stored trace of the ``integrate`` event of its birth) → the
     file is not the cause; the gate that stopped its failed runs picks a route
     from the task-commitment decision tree
     (:data:`~sentient_core.learning.commitment.ROUTES`): ``route``;
   * the file is gone or no longer holds that passage, and exactly one file in
     the allowed read dirs does → ``moved``, the new file is the fix;
   * no readable file holds it but a file of the same name is one the walk or the
     safety filter refuses (a symlink leading out of the allowed dirs, a hard link;
     never read) → ``needs_access``: reported, **never applied** — a fix may not
     widen what the recipe may touch;
   * otherwise (found nowhere, found in several files, no route left for the
     gate, not a local file) → ``inconclusive``: nothing is rewritten.

3. **Rewrites** a conclusive, allowed fix with
   :meth:`~sentient_core.recipes.RecipeBook.rewrite`: the old procedure goes to
   the recipe's revision history and it re-enters at ``draft``, to be verified
   again by real reuse. A recipe already rewritten :data:`REPAIR_LIMIT` times that
   is advisory again is retired instead ("resisted three repairs").

Every diagnosis is a :class:`~sentient_core.events.LayerEvent` (``procedural``
layer; ``repaired``, ``needs_access``, ``inconclusive`` or ``retired``) naming
the recipe and the failed requests it read. Files are found by walking only the
allowed read dirs and opened only through the safety filter's confined opener.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from sentient_core.errors import SentientError
from sentient_core.events import IntegrateEvent, JudgeEvent, LayerEvent, RecipeEvent, read_events
from sentient_core.ingest.walk import iter_files
from sentient_core.learning.commitment import ROUTES
from sentient_core.learning.safety import Refusal

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.learning.safety import SafetyFilter
    from sentient_core.memory import HolographicMemory
    from sentient_core.recipes import RecipeBook, RecipeRecord

__all__ = ["REPAIR_LIMIT", "Diagnosis", "RepairDriver", "RepairReport"]

REPAIR_LIMIT = 3
"""Rewrites a recipe gets; advisory again after this many, it is retired."""
EXCERPT_CHARS = 160
"""Characters of the birth passage looked for in files (whitespace-normalised)."""
MAX_FILE_BYTES = 8 << 20

Cause = Literal["route", "moved", "needs_access", "inconclusive", "no_failures"]


class Diagnosis(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What the driver concluded about one advisory recipe.

    Attributes
    ----------
    recipe : int
    cause : {"route", "moved", "needs_access", "inconclusive", "no_failures"}
    detail : str
        The reasoning, in words (kept in the recipe's history when it is rewritten).
    evidence : tuple of str
        The failed requests read from the audit log.
    source, route : str or None
        The fix (None: unchanged).
    """

    recipe: int
    cause: Cause
    detail: str
    evidence: tuple[str, ...] = ()
    source: str | None = None
    route: str | None = None

    @property
    def applicable(self) -> bool:
        """A conclusive fix that stays inside what the recipe may touch."""
        return self.cause in ("route", "moved")


class RepairReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One pass of the driver: advisory recipes examined and what became of them."""

    examined: int
    rewritten: int
    needs_access: int
    inconclusive: int
    retired: int
    deferred: int
    """Advisory recipes left for a later pass: the budget was spent."""
    diagnoses: tuple[Diagnosis, ...]


def _normal(text: str) -> str:
    return " ".join(text.split())


class RepairDriver:
    """The repair driver of one learner (see the module docstring).

    Parameters
    ----------
    book : RecipeBook
    memory : HolographicMemory
        Its store holds the audit log; its traces the passages recipes were born of.
    safety : SafetyFilter
        Every file is opened through it (confinement decides what may be read).
    roots : sequence of path
        The allowed read dirs searched for a moved file.
    budget : int
        Rewrites per pass.
    source_of : callable, optional
        A file path → the source id the offline answerer gives it (``local:/…``).
    emit : Emitter, optional
    """

    def __init__(
        self,
        book: RecipeBook,
        memory: HolographicMemory,
        safety: SafetyFilter,
        roots: Sequence[str | os.PathLike[str]],
        *,
        budget: int = 3,
        source_of: Callable[[str], str] | None = None,
        emit: Emitter | None = None,
    ) -> None:
        self.book = book
        self.memory = memory
        self.safety = safety
        self.roots = tuple(os.fspath(r) for r in roots)
        self.budget = budget
        self._source_of = source_of or (lambda path: f"local:{path}")
        self._emit = emit
        self._texts: dict[str, str | None] = {}

    # -- one pass ------------------------------------------------------------------------------

    def run(self) -> RepairReport:
        """Diagnose and, where allowed, rewrite or retire the advisory recipes."""
        self._texts = {}
        advisory = self.book.records(state="advisory")
        events = [e for _, e in read_events(self.memory.datastore)] if advisory else []
        out: list[Diagnosis] = []
        counts: Counter[str] = Counter()
        spent = 0
        for rec in advisory:
            if len(rec.revisions) >= REPAIR_LIMIT:
                self.book.retire(
                    rec.id,
                    f"resisted {len(rec.revisions)} repairs",
                    self._failed(rec, events),
                    self._emit,
                )
                self._say(rec.id, "retired", f"advisory again after {len(rec.revisions)} repairs")
                counts["retired"] += 1
                continue
            if spent >= self.budget:
                counts["deferred"] += 1
                continue
            diag = self.diagnose(rec, events)
            out.append(diag)
            if diag.applicable:
                self.book.rewrite(
                    rec.id,
                    f"repair ({diag.cause}): {diag.detail}"[:2000],
                    evidence=diag.evidence,
                    source=diag.source,
                    route=diag.route,
                    emit=self._emit,
                )
                spent += 1
                counts["rewritten"] += 1
                self._say(rec.id, "repaired", diag.detail, diag.evidence)
            elif diag.cause == "needs_access":
                counts["needs_access"] += 1
                self._say(rec.id, "needs_access", diag.detail, diag.evidence)
            else:
                counts["inconclusive"] += 1
                self._say(rec.id, "inconclusive", diag.detail, diag.evidence)
        return RepairReport(
            examined=len(advisory),
            rewritten=counts["rewritten"],
            needs_access=counts["needs_access"],
            inconclusive=counts["inconclusive"],
            retired=counts["retired"],
            deferred=counts["deferred"],
            diagnoses=tuple(out),
        )

    # -- diagnosis -----------------------------------------------------------------------------

    def diagnose(self, rec: RecipeRecord, events: Sequence[object]) -> Diagnosis:
        """The diagnosis of one advisory recipe from its failed runs (module docstring)."""
        failed = self._failed(rec, events)
        if not failed:
            return Diagnosis(
                recipe=rec.id, cause="no_failures", detail="no failed run in the audit log"
            )
        gates = Counter(e.gate for e in events if isinstance(e, JudgeEvent) and e.id in set(failed))
        excerpt = self._birth_excerpt(rec, events)
        path = rec.source[len("local:") :] if rec.source.startswith("local:") else ""
        if not path or not excerpt:
            why = "its source is not a local file" if not path else "its birth passage is unknown"
            return self._by_route(rec, failed, gates, why)
        if self._holds(path, excerpt):
            return self._by_route(rec, failed, gates, f"{path} still holds its passage")
        found, refused = self._search(excerpt, exclude=path)
        if len(found) == 1:
            new = found[0]
            return Diagnosis(
                recipe=rec.id,
                cause="moved",
                detail=f"{path} no longer holds the passage it was born of; {new} does",
                evidence=failed,
                source=self._source_of(new),
            )
        if not found and refused:
            return Diagnosis(
                recipe=rec.id,
                cause="needs_access",
                detail=(
                    f"{path} no longer holds its passage and no readable file does; a file of"
                    f" its name is where the recipe may not read: {', '.join(refused[:3])}"
                    " (reported, not applied: a fix may not widen access)"
                ),
                evidence=failed,
            )
        where = f"in {len(found)} files" if found else "nowhere in the allowed dirs"
        return Diagnosis(
            recipe=rec.id,
            cause="inconclusive",
            detail=f"{path} no longer holds its passage, found {where}",
            evidence=failed,
        )

    def _by_route(
        self, rec: RecipeRecord, failed: tuple[str, ...], gates: Counter[str], why: str
    ) -> Diagnosis:
        """A new route from the gate that stopped most failed runs, else inconclusive."""
        for gate, _ in sorted(gates.items(), key=lambda g: (-g[1], g[0])):
            for route in ROUTES.get(gate, ()):
                tried = {rec.route, *(r.route for r in rec.revisions)}
                if route not in tried:
                    return Diagnosis(
                        recipe=rec.id,
                        cause="route",
                        detail=f"{why}; its failed runs stopped at the {gate} gate: ask {route}",
                        evidence=failed,
                        route=route,
                    )
        shown = ", ".join(f"{g} {n}" for g, n in sorted(gates.items())) or "none"
        return Diagnosis(
            recipe=rec.id,
            cause="inconclusive",
            detail=f"{why}; no untried route for the gates of its failed runs ({shown})",
            evidence=failed,
        )

    def _failed(self, rec: RecipeRecord, events: Sequence[object]) -> tuple[str, ...]:
        """Requests that failed ``rec`` since its last rewrite (oldest first)."""
        out: list[str] = []
        for e in events:
            if not isinstance(e, RecipeEvent) or e.recipe != rec.id:
                continue
            if e.action == "rewritten":
                out = []
            elif e.action == "failed" and e.request:
                out.append(e.request)
        return tuple(out[-8:])

    def _birth_excerpt(self, rec: RecipeRecord, events: Sequence[object]) -> str:
        """A run of the passage the recipe was born of, as a stored trace holds it."""
        for e in events:
            if isinstance(e, IntegrateEvent) and e.id == rec.born_of:
                for t in (*e.trace_ids, *e.known_ids):
                    trace = self.memory.get(t)
                    if trace is not None and len(_normal(trace.text)) >= 40:
                        text = _normal(trace.text)
                        mid = max(0, (len(text) - EXCERPT_CHARS) // 2)
                        return text[mid : mid + EXCERPT_CHARS]
        return ""

    def _read(self, path: str) -> str | None:
        """The text of ``path`` through the confined opener (whitespace-normalised); None if
        refused or unreadable. Read once a pass: every advisory recipe searches the same dirs."""
        if path not in self._texts:
            try:
                with self.safety.open_local(path) as f:
                    text: str | None = _normal(f.read(MAX_FILE_BYTES).decode("utf-8", "replace"))
            except (Refusal, SentientError, OSError):
                text = None
            self._texts[path] = text
        return self._texts[path]

    def _holds(self, path: str, excerpt: str) -> bool:
        text = self._read(path)
        return text is not None and excerpt in text

    def _search(self, excerpt: str, *, exclude: str) -> tuple[list[str], list[str]]:
        """Files of the allowed dirs holding ``excerpt`` (each opened through the safety
        filter), and the files named like ``exclude`` that the walk or the filter refuses
        (a symlink leading out, a hard link): never read, only named in the report."""
        name = Path(exclude).name
        found: list[str] = []
        refused: list[str] = []
        for entry in iter_files(self.roots):
            path = os.fspath(entry.path)
            if path == exclude:
                continue
            if entry.skip_reason is not None:
                if Path(path).name == name:
                    refused.append(f"{path} ({entry.skip_reason})")
                continue
            text = self._read(path)
            if text is None:
                if Path(path).name == name:
                    refused.append(f"{path} (refused by the safety filter)")
            elif excerpt in text:
                found.append(path)
        return found, refused

    def _say(self, recipe: int, action: str, detail: str, evidence: Sequence[str] = ()) -> None:
        if self._emit is None:
            return
        failed = f" (failed runs read: {', '.join(evidence)})" if evidence else ""
        self._emit.emit(
            LayerEvent,
            layer="procedural",
            record=f"recipe:{recipe}",
            action=action,
            reason=f"{detail}{failed}"[:2000],
        )
