"""The settings a ``sentient.toml`` may hold: one frozen msgspec struct per section.

Bounds are checked by msgspec when a file is decoded (``Meta``), then
:func:`check_safety` refuses any safety value looser than the built-in policy
unless it is given through an ``unsafe_`` key, which the learner logs at start.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from sentient_core.autonomy.judge import JudgeSettings
from sentient_core.errors import ArgumentError
from sentient_core.ingest import MAX_WHOLE_FILE_BYTES
from sentient_core.learning.learner import MAX_SESSION_ITERATIONS
from sentient_core.learning.safety import DEFAULT_ALLOWED_DOMAINS
from sentient_core.search.types import SearchSettings

__all__ = [
    "BudgetSection",
    "ChaperoneSection",
    "ConfigError",
    "LearnerSection",
    "SafetySection",
    "ServerSection",
    "Settings",
    "check_safety",
]

MiB = 1 << 20
DEFAULT_MAX_BYTES = 10 * MiB
DEFAULT_MAX_FILES = 50
DEFAULT_RATE_REQUESTS = 10
DEFAULT_RATE_WINDOW_S = 60.0

Iterations = Annotated[int, msgspec.Meta(ge=1, le=MAX_SESSION_ITERATIONS)]
Cap = Annotated[int, msgspec.Meta(ge=0, le=10**12)]
Seconds = Annotated[float, msgspec.Meta(gt=0.0, le=7200.0)]
Text = Annotated[str, msgspec.Meta(max_length=2000)]


class ConfigError(ArgumentError):
    """A configuration value is unknown, malformed or out of bounds (the message
    names the key and where the value came from)."""


# Subclasses repeat frozen=True: msgspec inherits it, but type checkers
# (PEP 681 dataclass_transform) would read them as non-frozen.
class _Section(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


class LearnerSection(_Section, frozen=True):
    """``[learner]``: the loop.

    Attributes
    ----------
    interval_s : float
        Seconds between iterations.
    iterations : int
        Iterations ``learn`` runs (at most ``max_iterations``).
    max_iterations : int
        Iterations per session, at most 100 (SPEC); a served session runs to it.
    reflect_every : int
        Reflect every this many iterations, and at the end of a session (0: never — no
        follow-ups, condensation or repair either).
    commit_routes : int
        Routes the task-commitment drive tries per user question before it gives up
        (0, the default: off).
    condense : bool
        Condense agreeing episodes from independent sources into semantic notes after
        each reflection (default on).
    recipes : bool
        Recipes: try the one standing for a question's kind and domain first, and learn
        them from judged successes (see docs/recipes.md).
    skill_repair : bool
        With recipes on: rewrite advisory recipes diagnosed from their failed runs.
    repair_budget : int
        Recipe rewrites per repair pass.
    use_wisdom : bool
        Provisional and trusted wisdom weigh the sources it found wrong: routing,
        a prior in a new domain, the recall factor (default on; see docs/metamemory.md).
    field_gaps : bool
        An SMF-axis gap asks about the corpus topics whose passage loads the starved
        axis (:mod:`sentient_core.learning.field_gaps`); false: the most related topic.
    link_gaps : bool
        Curiosity raises ``link`` gaps: a densely linked subject's one unanswered
        neighbour (:mod:`sentient_core.learning.link_gaps`).
    """

    interval_s: Annotated[float, msgspec.Meta(ge=0.0, le=86400.0)] = 30.0
    iterations: Iterations = 10
    max_iterations: Iterations = MAX_SESSION_ITERATIONS
    reflect_every: Annotated[int, msgspec.Meta(ge=0, le=MAX_SESSION_ITERATIONS)] = 10
    commit_routes: Annotated[int, msgspec.Meta(ge=0, le=4)] = 0
    condense: bool = True
    recipes: bool = False
    skill_repair: bool = True
    repair_budget: Annotated[int, msgspec.Meta(ge=0, le=100)] = 3
    use_wisdom: bool = True
    field_gaps: bool = True
    link_gaps: bool = True


class ChaperoneSection(_Section, frozen=True):
    """``[chaperone]``: who answers.

    Attributes
    ----------
    llm_url : str
        OpenAI-compatible base URL (``http(s)://…/v1``); "" answers offline.
    model : str
    timeout_s, deadline_s, question_deadline_s : float
        One HTTP request; one whole call with its retries; every model call
        made for one question (answer, summary, judge).
    corpus_dirs : tuple of str
        Extra folders the offline answerer reads (local reads may come from them).
    include_python_docs : bool
    user_share : float
        Of the topics curiosity picks on its own, the share from the user's sources
        (incoming dir, ``corpus_dirs``) while any is left; the shipped docs get the rest.
    """

    llm_url: Text = ""
    model: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] = "local-model"
    timeout_s: Seconds = 30.0
    deadline_s: Seconds = 45.0
    question_deadline_s: Seconds = 75.0
    corpus_dirs: tuple[Text, ...] = ()
    include_python_docs: bool = True
    user_share: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.85


class SafetySection(_Section, frozen=True):
    """``[safety]``: the chaperone's checks. Plain keys may only tighten the
    built-in policy; an ``unsafe_`` key loosens one on purpose (logged at start).

    Attributes
    ----------
    allowed_domains : tuple of str or None
        None: the built-in allow-list; else a subset of it (subdomains count).
    allowed_dirs : tuple of str
        Extra directories local reads may come from (besides the incoming dir
        and the corpus dirs).
    max_bytes, max_files_per_session : int
        At most the built-in 10 MiB and 50.
    rate_limit_requests, rate_limit_window_s : int, float
        At most 10 requests, in a window of at least 60 s.
    unsafe_extra_domains : tuple of str
        Domains added to the allow-list.
    unsafe_max_bytes, unsafe_max_files_per_session, unsafe_rate_limit_requests : int
        Larger limits than the built-in ones (0: not used).
    unsafe_allow_http, unsafe_allow_private_addresses, unsafe_allow_hardlinks : bool
        Turn the https-only, public-address and single-link checks off.
    """

    allowed_domains: tuple[Text, ...] | None = None
    allowed_dirs: tuple[Text, ...] = ()
    max_bytes: Annotated[int, msgspec.Meta(ge=1)] = DEFAULT_MAX_BYTES
    max_files_per_session: Annotated[int, msgspec.Meta(ge=1)] = DEFAULT_MAX_FILES
    rate_limit_requests: Annotated[int, msgspec.Meta(ge=1)] = DEFAULT_RATE_REQUESTS
    rate_limit_window_s: Annotated[float, msgspec.Meta(gt=0.0, le=86400.0)] = DEFAULT_RATE_WINDOW_S
    unsafe_extra_domains: tuple[Text, ...] = ()
    unsafe_max_bytes: Annotated[int, msgspec.Meta(ge=0, le=1 << 34)] = 0
    unsafe_max_files_per_session: Annotated[int, msgspec.Meta(ge=0, le=100_000)] = 0
    unsafe_rate_limit_requests: Annotated[int, msgspec.Meta(ge=0, le=100_000)] = 0
    unsafe_allow_http: bool = False
    unsafe_allow_private_addresses: bool = False
    unsafe_allow_hardlinks: bool = False


class BudgetSection(_Section, frozen=True):
    """``[budget]``: the five spend caps (0 = unlimited; see :class:`BudgetCaps`)."""

    daily_tokens: Cap = 20000
    daily_tool_calls: Cap = 50
    per_tick_tokens: Cap = 16000
    per_tick_initiatives: Cap = 8
    per_initiative_tokens: Cap = 2000


class ServerSection(_Section, frozen=True):
    """``[server]``: ``serve``.

    Attributes
    ----------
    host, port : str, int
        Where to listen (loopback by default; port 0 picks a free one).
    require_token : bool
        Kept so that older files load: every address, loopback included, now
        asks for the token (or a panel session obtained with it).
    token_file : str
        A file holding the token (else ``SENTIENT_SERVER_TOKEN``, else one is
        generated and printed once).
    allowed_hosts : tuple of str
        Extra ``Host`` names accepted (a reverse proxy's name).
    max_body_bytes : int
        Largest JSON request body.
    max_upload_bytes : int
        Largest ``/ingest`` upload (at most the CLI's 64 MiB whole-file cap).
    flush_delay_ms : float
        How long the server lets events gather before committing them to the
        audit log (and so to the live stream).
    session_lifetime_s, session_idle_s : float
        A panel session ends this long after login, or after this long unused.
    max_stream_clients : int
        Live-stream (SSE) clients at once; one more gets 503.
    recall_spread : int
        Link hops ``GET /recall`` spreads along when the request names none (0: off;
        spreading measured no answer@5 gain on the Q/A sets, see
        :mod:`sentient_core.memory.spreading`).
    """

    host: Annotated[str, msgspec.Meta(min_length=1, max_length=255)] = "127.0.0.1"
    port: Annotated[int, msgspec.Meta(ge=0, le=65535)] = 8765
    require_token: bool = False
    token_file: Text = ""
    allowed_hosts: tuple[Annotated[str, msgspec.Meta(min_length=1, max_length=255)], ...] = ()
    max_body_bytes: Annotated[int, msgspec.Meta(ge=1024, le=16 * MiB)] = 64 * 1024
    max_upload_bytes: Annotated[int, msgspec.Meta(ge=1, le=MAX_WHOLE_FILE_BYTES)] = (
        MAX_WHOLE_FILE_BYTES
    )
    flush_delay_ms: Annotated[float, msgspec.Meta(ge=0.0, le=10_000.0)] = 5.0
    session_lifetime_s: Annotated[float, msgspec.Meta(ge=60.0, le=30 * 86400.0)] = 86400.0
    session_idle_s: Annotated[float, msgspec.Meta(ge=60.0, le=30 * 86400.0)] = 8 * 3600.0
    max_stream_clients: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 32
    recall_spread: Annotated[int, msgspec.Meta(ge=0, le=3)] = 0


class Settings(_Section, frozen=True):
    """A whole ``sentient.toml``: every section, each optional (``[judge]``:
    :class:`~sentient_core.autonomy.judge.JudgeSettings`; ``[search]``:
    :class:`~sentient_core.search.types.SearchSettings`)."""

    learner: LearnerSection = LearnerSection()
    chaperone: ChaperoneSection = ChaperoneSection()
    safety: SafetySection = SafetySection()
    budget: BudgetSection = BudgetSection()
    server: ServerSection = ServerSection()
    judge: JudgeSettings = JudgeSettings()
    search: SearchSettings = SearchSettings()


def _under_default(domain: str) -> bool:
    d = domain.strip().lower().rstrip(".")
    return any(d == base or d.endswith("." + base) for base in DEFAULT_ALLOWED_DOMAINS)


def check_safety(s: SafetySection) -> list[str]:
    """Problems with ``s`` (keys that loosen a check without ``unsafe_``), else []."""
    problems = []
    loose = [d for d in s.allowed_domains or () if not _under_default(d)]
    if loose:
        problems.append(
            f"safety.allowed_domains: {', '.join(loose)} not in the built-in allow-list"
            " (only a subset tightens it); use unsafe_extra_domains to add domains on purpose"
        )
    for key, default, unsafe in (
        ("max_bytes", DEFAULT_MAX_BYTES, "unsafe_max_bytes"),
        ("max_files_per_session", DEFAULT_MAX_FILES, "unsafe_max_files_per_session"),
        ("rate_limit_requests", DEFAULT_RATE_REQUESTS, "unsafe_rate_limit_requests"),
    ):
        value = getattr(s, key)
        if value > default:
            problems.append(
                f"safety.{key} = {value} loosens a check (at most {default});"
                f" use {unsafe} to do that on purpose"
            )
    if s.rate_limit_window_s < DEFAULT_RATE_WINDOW_S:
        problems.append(
            f"safety.rate_limit_window_s = {s.rate_limit_window_s:g} loosens the rate limit"
            f" (at least {DEFAULT_RATE_WINDOW_S:g} s)"
        )
    return problems
