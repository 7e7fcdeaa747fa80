"""What an ingest run reports: its summary, its progress updates and its per-stage times.

Types only, shared by :mod:`~sentient_core.integrate.pipeline` (which fills them)
and :mod:`~sentient_core.integrate.ledger` (which counts files into them).
"""

from __future__ import annotations

import msgspec

__all__ = ["STAGES", "IngestSummary", "Progress", "SkippedFile", "StageTimes"]

STAGES = ("read", "extract", "chunk", "encode", "keywords", "observe", "code", "commit")


class SkippedFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A file that was not ingested, and why."""

    path: str
    reason: str


class StageTimes(msgspec.Struct, forbid_unknown_fields=True):
    """Seconds spent per stage (the stages: :mod:`sentient_core.integrate.pipeline`).

    Each stage's seconds are wall time on the thread that ran it. By default
    ``keywords``, ``code`` and ``commit`` of a batch run on the commit thread
    while the caller's thread prepares the next batch, so the stages can add up to
    more than the run took:
    ``offloaded`` is the seconds of stages run off the caller's thread, ``wait``
    what the caller spent blocked on them. :meth:`caller` — the stages minus
    ``offloaded`` plus ``wait`` — is at most the run's wall time.
    """

    read: float = 0.0
    extract: float = 0.0
    chunk: float = 0.0
    encode: float = 0.0
    keywords: float = 0.0
    observe: float = 0.0
    code: float = 0.0
    commit: float = 0.0
    wait: float = 0.0
    offloaded: float = 0.0

    def total(self) -> float:
        """Seconds of every stage (overlapping ones counted in full)."""
        return sum(getattr(self, s) for s in STAGES)

    def caller(self) -> float:
        """Seconds on the caller's thread: the stages but what ran elsewhere
        (``offloaded``), and ``wait``."""
        return self.total() - self.offloaded + self.wait


class IngestSummary(msgspec.Struct, forbid_unknown_fields=True):
    """What one ingest run did.

    ``chunks`` counts new traces; ``duplicates`` counts chunks memory already
    held (stored nothing; the holder's use count went up unless it came from
    the same file). ``ids`` are the new traces' ids, ``known`` the holders' ids,
    in chunk order. ``unchanged`` files were skipped (same bytes as when last
    ingested); ``changed`` files had been ingested before with other bytes, and
    ``superseded`` of their old traces were retired. ``interrupted``: the run
    was asked to stop (``stop``) and ended after the file it was on, with that
    file's chunks committed and the files after it not read.
    """

    files: int = 0
    chunks: int = 0
    duplicates: int = 0
    unchanged: int = 0
    changed: int = 0
    superseded: int = 0
    stopped_by: str = ""
    interrupted: bool = False
    ids: list[int] = msgspec.field(default_factory=list)
    known: list[int] = msgspec.field(default_factory=list)
    bytes: int = 0
    seconds: float = 0.0
    commits: int = 0
    skipped: list[SkippedFile] = msgspec.field(default_factory=list)
    stages: StageTimes = msgspec.field(default_factory=StageTimes)

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        d = msgspec.to_builtins(self)
        d["chunks_per_s"] = self.chunks_per_s
        d["mb_per_s"] = self.mb_per_s
        return d


class Progress(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A progress update passed to the ``progress`` callback."""

    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    chunks: int
    elapsed: float
    current: str
