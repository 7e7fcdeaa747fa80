"""The LLM client's types: its settings, replies, usage totals and errors.

Kept apart from :mod:`sentient_core.learning.llm` (the client itself) so that
configuration and the exception tree can be read, and imported, on their own.
Every name here is re-exported by :mod:`sentient_core.learning.llm`.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from sentient_core.errors import SentientError

__all__ = [
    "BODY_EXCERPT_CHARS",
    "FORMAT_MODES",
    "LATENCY_WINDOW",
    "SYSTEM_ANSWER",
    "SYSTEM_SUMMARY",
    "FormatMode",
    "LLMBadResponse",
    "LLMConfig",
    "LLMError",
    "LLMHTTPError",
    "LLMReply",
    "LLMUnavailable",
    "LLMUsage",
]

PosFloat = Annotated[float, msgspec.Meta(gt=0.0)]
NonNegFloat = Annotated[float, msgspec.Meta(ge=0.0)]
NonNeg = Annotated[int, msgspec.Meta(ge=0)]

BODY_EXCERPT_CHARS = 300

LATENCY_WINDOW = 10_000
"""Replies whose latency :meth:`LLMClient.latency` keeps (the most recent)."""

FormatMode = Literal["json_schema", "json_object", "plain"]
FORMAT_MODES: tuple[FormatMode, ...] = ("json_schema", "json_object", "plain")
"""Ways of asking for structured output, in the order they are tried."""

SYSTEM_ANSWER = (
    "You are the chaperone of an autonomous learner. Answer the question factually "
    "and concisely. If you are not sure, say that you do not know."
)
SYSTEM_SUMMARY = (
    "Summarize the following content in a few sentences. Keep only what the content "
    "says; add nothing."
)


class LLMConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Where and how to reach the chat-completions server.

    Attributes
    ----------
    base_url : str
        Up to and including ``/v1``; ``/chat/completions`` is appended.
    model : str
        Model name sent in each request.
    api_key_env : str
        Environment variable holding the API key (unset or empty: no key sent).
    timeout_s : float
        Connect/read/write timeout and the deadline for a whole response.
    deadline_s : float
        One deadline for a whole call, across every attempt and back-off.
    question_deadline_s : float
        One deadline for every call made for one question (the answer, its
        summary and the judge's check; see :meth:`LLMClient.question`): a
        hung or overloaded model costs a question at most this long, however
        many calls it takes. A call that would start after it is not made.
    breaker_failures, breaker_cool_down_s : int, float
        After this many failed calls in a row the chaperone stops calling the
        model for the cool-down and answers from the offline corpus at once
        (:class:`~sentient_core.autonomy.breaker.CircuitBreaker`).
    max_retries : int
        Retries after the first attempt (so at most ``1 + max_retries`` attempts).
    retry_timeouts : bool
        Retry a request that timed out after it was sent (off by default): a
        one-slot server such as llama.cpp's keeps computing the abandoned
        request, so a retry only queues behind it (measured: 4 attempts and
        103 s of compute for one answer). A connect timeout is always retried.
    backoff_s, backoff_max_s : float
        First retry wait and its cap (doubling in between).
    retry_after_max_s : float
        Largest ``Retry-After`` honoured; a longer one ends the request.
    answer_max_tokens, temperature : int, float
        Limits for :meth:`LLMClient.ask`.
    summary_max_tokens, summary_temperature, summary_input_chars
        Limits for :meth:`LLMClient.summarize` (only the first
        ``summary_input_chars`` characters are sent).
    max_response_bytes : int
        Larger response bodies are refused (a 500-token answer is a few KiB).
    trust_env : bool
        Use proxy settings from the environment (off: the default server is local).
    """

    base_url: str = "http://localhost:1234/v1"
    model: str = "local-model"
    api_key_env: str = "SENTIENT_LLM_API_KEY"
    timeout_s: Annotated[float, msgspec.Meta(gt=0.0, le=3600.0)] = 30.0
    deadline_s: Annotated[float, msgspec.Meta(gt=0.0, le=7200.0)] = 45.0
    question_deadline_s: Annotated[float, msgspec.Meta(gt=0.0, le=7200.0)] = 75.0
    breaker_failures: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 3
    breaker_cool_down_s: Annotated[float, msgspec.Meta(ge=0.0, le=86400.0)] = 60.0
    max_retries: Annotated[int, msgspec.Meta(ge=0, le=20)] = 3
    retry_timeouts: bool = False
    backoff_s: Annotated[float, msgspec.Meta(ge=0.0, le=60.0)] = 0.5
    backoff_max_s: Annotated[float, msgspec.Meta(ge=0.0, le=600.0)] = 8.0
    retry_after_max_s: Annotated[float, msgspec.Meta(ge=0.0, le=600.0)] = 10.0
    answer_max_tokens: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 500
    temperature: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] = 0.7
    summary_max_tokens: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 300
    summary_temperature: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] = 0.5
    summary_input_chars: Annotated[int, msgspec.Meta(ge=1)] = 4000
    max_response_bytes: Annotated[int, msgspec.Meta(ge=1024)] = 1 << 20
    trust_env: bool = False

    @property
    def longest_wait_s(self) -> float:
        """The longest one call waits for a model that does not answer: one attempt's
        timeout unless timed-out requests are retried, and never past the deadline."""
        return self.deadline_s if self.retry_timeouts else min(self.deadline_s, self.timeout_s)


class LLMReply(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One completion.

    ``estimated`` is true when the server sent no ``usage`` and the token
    counts are ``ceil(chars / 4)`` estimates.
    """

    text: str
    prompt_tokens: NonNeg
    completion_tokens: NonNeg
    total_tokens: NonNeg
    model: str
    attempts: Annotated[int, msgspec.Meta(ge=1)]
    elapsed_s: NonNegFloat
    estimated: bool = False
    finish_reason: str = ""


class LLMUsage(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Running totals of one client (a snapshot)."""

    requests: NonNeg = 0
    attempts: NonNeg = 0
    replies: NonNeg = 0
    failures: NonNeg = 0
    retries: NonNeg = 0
    prompt_tokens: NonNeg = 0
    completion_tokens: NonNeg = 0
    total_tokens: NonNeg = 0
    estimated_replies: NonNeg = 0
    estimated_tokens: NonNeg = 0
    format_refusals: NonNeg = 0
    skipped_past_deadline: NonNeg = 0


class LLMError(SentientError):
    """Base of the LLM client's errors."""


class LLMUnavailable(LLMError):
    """The server could not be reached or did not answer in time on any attempt."""


class LLMHTTPError(LLMError):
    """The server answered with an HTTP error status.

    Attributes
    ----------
    status : int
    body : str
        The start of the response body (at most 300 characters).
    retry_after : float or None
        The server's ``Retry-After`` in seconds, if it sent one.
    """

    def __init__(self, status: int, body: str, retry_after: float | None = None, note: str = ""):
        self.status = status
        self.body = body
        self.retry_after = retry_after
        msg = f"HTTP {status}" + (f" ({note})" if note else "")
        super().__init__(f"{msg}: {body}" if body else msg)

    def __reduce__(self):
        return (type(self), (self.status, self.body, self.retry_after))


class LLMBadResponse(LLMError):
    """The server answered 2xx but the body is not a usable completion."""


# Server responses are parsed leniently (servers add their own fields), but
# the parts we use must have the right types.
