"""Client for any OpenAI-compatible ``/v1/chat/completions`` server.

LM Studio (the default ``http://localhost:1234/v1``), llama.cpp's server,
Ollama and vLLM all speak this schema. Only the chaperone uses this client.

Retry policy
------------
A request is tried at most ``1 + max_retries`` times. Retried: connection
errors (a connect timeout too), HTTP 5xx and HTTP 429. A request that timed out
after it was sent is not retried unless ``retry_timeouts``: a one-slot server
goes on computing it and a retry would queue behind it. The wait before retry ``n`` (1-based)
is ``min(backoff_max_s, backoff_s · 2**(n-1))`` — no jitter, so runs are
deterministic. A ``Retry-After`` (seconds) of at most ``retry_after_max_s`` is
honoured instead; a longer one ends a 429 at once (waiting an hour inside a
learning step helps nobody) and is ignored on a 5xx (plain backoff). Other 4xx and malformed bodies are
not retried: asking again would get the same answer.

Timeouts
--------
``timeout_s`` bounds connect, each read and each write (``httpx.Timeout``) and
also the *whole* response: the body is streamed and a server that dribbles
bytes slowly is cut off at the deadline. Bodies above ``max_response_bytes``
are refused while streaming.

Exceptions::

    LLMError                 base
    ├── LLMUnavailable       could not connect, or timed out, on every attempt
    ├── LLMHTTPError         an HTTP error status (``status``, ``body`` excerpt)
    └── LLMBadResponse       not JSON, no choices, empty content, oversize body

Structured replies
------------------
:meth:`LLMClient.chat_json` asks for a reply that fits a JSON schema. Servers
differ: OpenAI, vLLM, LM Studio and llama.cpp's own server take
``response_format = {"type": "json_schema", ...}``; llama-cpp-python's server
takes ``{"type": "json_object", "schema": ...}``; some take neither. The client
tries them in that order; a server that refuses one with HTTP 400 or 422 is
asked the next way, and the first way a server accepts is remembered for the
client's life (:attr:`LLMClient.format_mode`), so the detection costs at most
two refused requests once. Without any, the request goes plain and the caller
parses the text tolerantly.

The API key (optional) is read from the environment variable named by
``api_key_env`` at each request and sent as ``Authorization: Bearer …``; it is
never stored on the client, put in a message, or logged.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import msgspec

from sentient_core.errors import ArgumentError
from sentient_core.learning.llm_types import (
    BODY_EXCERPT_CHARS,
    FORMAT_MODES,
    LATENCY_WINDOW,
    SYSTEM_ANSWER,
    SYSTEM_SUMMARY,
    FormatMode,
    LLMBadResponse,
    LLMConfig,
    LLMError,
    LLMHTTPError,
    LLMReply,
    LLMUnavailable,
    LLMUsage,
)

__all__ = [
    "FORMAT_MODES",
    "FormatMode",
    "LLMBadResponse",
    "LLMClient",
    "LLMConfig",
    "LLMError",
    "LLMHTTPError",
    "LLMReply",
    "LLMUnavailable",
    "LLMUsage",
    "tokens_since",
    "usage_of",
]


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message | None = None
    text: str | None = None  # legacy completions-style servers
    finish_reason: str | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


class _Completion(msgspec.Struct):
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    model: str | None = None


_DECODE_COMPLETION = msgspec.json.Decoder(_Completion)
_ENCODE = msgspec.json.Encoder()


class _Timeout(Exception):
    """Whole-response deadline passed (internal; becomes a retried timeout)."""


def _estimate_tokens(chars: int) -> int:
    return math.ceil(chars / 4)


def _excerpt(data: bytes) -> str:
    text = data[: BODY_EXCERPT_CHARS * 4].decode("utf-8", errors="replace")
    text = " ".join(text.split())
    return text[:BODY_EXCERPT_CHARS]


def _retry_after(value: str | None) -> float | None:
    # Only the delta-seconds form; an HTTP-date would need the server's clock.
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _refuses_format(err: LLMHTTPError) -> bool:
    """Whether an error answers "I do not take this response_format" (400/422, or a 500
    naming it, as llama-cpp-python's validation error does)."""
    return err.status in (400, 422) or (err.status == 500 and "response_format" in err.body)


class LLMClient:
    """Chat completions with bounded retries, a deadline and usage accounting.

    Parameters
    ----------
    config : LLMConfig, optional
    transport : httpx.BaseTransport, optional
        For unit tests (``httpx.MockTransport``); default: real network.
    sleep : callable
        Waits between retries (injectable so tests do not wait).
    monotonic : callable
        Clock for the response deadline and ``elapsed_s``.
    environ : mapping, optional
        Where the API key is looked up (default ``os.environ``).

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        config: LLMConfig | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        environ: Mapping[str, str] | None = None,
    ):
        self.config = config or LLMConfig()
        self._sleep = sleep
        self._monotonic = monotonic
        # None: read os.environ at each request (the key is never copied onto the client).
        self._environ = environ
        self._url = self.config.base_url.rstrip("/") + "/chat/completions"
        t = self.config.timeout_s
        self._http = httpx.Client(
            transport=transport,
            timeout=httpx.Timeout(t, connect=t, read=t, write=t, pool=t),
            trust_env=self.config.trust_env,
            follow_redirects=False,
        )
        self._lock = threading.Lock()
        self._usage: dict[str, int] = dict.fromkeys(LLMUsage.__struct_fields__, 0)
        self._format: FormatMode | None = None
        self._latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)
        # Per thread: the monotonic end of the question being worked on (None: no question).
        self._question = threading.local()

    # ------------------------------------------------------------------ lifecycle

    @contextmanager
    def question(self, deadline_s: float | None = None) -> Iterator[float]:
        """Every call inside shares one deadline (``config.question_deadline_s`` by default).

        Yields the monotonic end. Nested uses keep the outer, earlier end.
        """
        limit = self.config.question_deadline_s if deadline_s is None else float(deadline_s)
        if not limit > 0.0:
            raise ArgumentError(f"deadline_s must be > 0, got {deadline_s!r}")
        outer: float | None = getattr(self._question, "end", None)
        end = self._monotonic() + limit
        if outer is not None:
            end = min(end, outer)
        self._question.end = end
        try:
            yield end
        finally:
            self._question.end = outer

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.config.base_url!r}, model={self.config.model!r})"

    @property
    def model(self) -> str:
        """The configured model name."""
        return self.config.model

    @property
    def total_usage(self) -> LLMUsage:
        """Totals since the client was made (requests, attempts, tokens, …)."""
        with self._lock:
            return LLMUsage(**self._usage)

    def latency(self) -> dict[str, float]:
        """Seconds per answered call (all attempts): ``n``, ``p50``, ``p90``, ``p99``, ``max``.

        Over the most recent :data:`LATENCY_WINDOW` replies; zeros before the first.
        """
        with self._lock:
            xs = sorted(self._latencies)
        if not xs:
            return {"n": 0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}

        def pct(q: float) -> float:  # nearest rank
            return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]

        return {"n": len(xs), "p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": xs[-1]}

    def _count(self, **inc: int) -> None:
        with self._lock:
            for key, n in inc.items():
                self._usage[key] += n

    # ------------------------------------------------------------------ high level

    def ask(self, question: str, context: str = "") -> LLMReply:
        """Answer a question (≤ ``answer_max_tokens`` at ``temperature``)."""
        user = f"Context:\n{context}\n\nQuestion: {question}" if context else question
        return self.chat(
            [{"role": "system", "content": SYSTEM_ANSWER}, {"role": "user", "content": user}],
            max_tokens=self.config.answer_max_tokens,
            temperature=self.config.temperature,
        )

    def summarize(self, text: str) -> LLMReply:
        """Summarise the first ``summary_input_chars`` characters of ``text``."""
        return self.chat(
            [
                {"role": "system", "content": SYSTEM_SUMMARY},
                {"role": "user", "content": text[: self.config.summary_input_chars]},
            ],
            max_tokens=self.config.summary_max_tokens,
            temperature=self.config.summary_temperature,
        )

    @property
    def format_mode(self) -> FormatMode | None:
        """How this server takes structured-output requests (None: not asked yet)."""
        return self._format

    def chat_json(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        schema: Mapping[str, Any],
        name: str,
        max_tokens: int,
        temperature: float = 0.0,
    ) -> LLMReply:
        """A chat completion constrained to the JSON ``schema`` where the server can.

        See "Structured replies" in the module docstring. The reply's text is
        not validated here (a ``plain`` server may answer in prose).

        Raises
        ------
        LLMUnavailable, LLMHTTPError, LLMBadResponse
        """
        modes = FORMAT_MODES if self._format is None else (self._format,)
        for i, mode in enumerate(modes):
            fmt: dict[str, Any] | None
            if mode == "json_schema":
                fmt = {
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": dict(schema), "strict": True},
                }
            elif mode == "json_object":
                fmt = {"type": "json_object", "schema": dict(schema)}
            else:
                fmt = None
            probing = len(modes) > 1 and i + 1 < len(modes)
            try:
                reply = self.chat(
                    messages,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    response_format=fmt,
                    retries=0 if probing else None,
                )
            except LLMHTTPError as err:
                if probing and _refuses_format(err):
                    self._count(format_refusals=1)
                    continue
                if not (probing and err.status >= 500):
                    raise
                # A server error, not a refusal: this way again, with the retries left.
                reply = self.chat(
                    messages,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    response_format=fmt,
                    retries=max(0, self.config.max_retries - 1),
                )
            self._format = mode
            return reply
        raise AssertionError("unreachable: the plain mode returns or raises")

    # ------------------------------------------------------------------ core

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        response_format: Mapping[str, Any] | None = None,
        retries: int | None = None,
    ) -> LLMReply:
        """POST one chat completion, retrying per the module's policy.

        Parameters
        ----------
        messages : sequence of {"role": ..., "content": ...}
        max_tokens : int
        temperature : float
        response_format : mapping, optional
            Sent as is (see :meth:`chat_json`).
        retries : int, optional
            Instead of ``max_retries`` for this call.

        Raises
        ------
        LLMUnavailable, LLMHTTPError, LLMBadResponse
        """
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(m) for m in messages],
            "max_tokens": int(max_tokens),
            "temperature": float(temperature),
            "stream": False,
        }
        if response_format is not None:
            body["response_format"] = dict(response_format)
        payload = _ENCODE.encode(body)
        prompt_chars = sum(len(m.get("content", "")) for m in messages)
        start = self._monotonic()
        end = start + self.config.deadline_s
        question_end: float | None = getattr(self._question, "end", None)
        if question_end is not None and question_end < end:
            end = question_end
            if end - start <= 0.0:
                self._count(skipped_past_deadline=1)
                raise LLMUnavailable(
                    f"{self._url}: not called: the question's deadline of"
                    f" {self.config.question_deadline_s:g} s has passed"
                )
        self._count(requests=1)
        attempt = 0
        while True:
            attempt += 1
            self._count(attempts=1)
            try:
                result = self._attempt(payload, attempt, end, retries)
            except LLMError:
                self._count(failures=1)
                raise
            if isinstance(result, LLMReply):
                return self._finish(result, prompt_chars, attempt, start)
            if self._monotonic() + result >= end:
                self._count(failures=1)
                raise LLMUnavailable(
                    f"{self._url}: no answer within the call's deadline of"
                    f" {self.config.deadline_s:g} s ({attempt} attempt(s))"
                )
            self._count(retries=1)
            self._sleep(result)

    def _finish(self, raw: LLMReply, prompt_chars: int, attempts: int, start: float) -> LLMReply:
        reply = msgspec.structs.replace(
            raw, attempts=attempts, elapsed_s=max(0.0, self._monotonic() - start)
        )
        if reply.estimated:
            reply = msgspec.structs.replace(
                reply,
                prompt_tokens=_estimate_tokens(prompt_chars),
                completion_tokens=_estimate_tokens(len(reply.text)),
            )
            reply = msgspec.structs.replace(
                reply, total_tokens=reply.prompt_tokens + reply.completion_tokens
            )
        self._count(
            replies=1,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            total_tokens=reply.total_tokens,
            estimated_replies=int(reply.estimated),
            estimated_tokens=reply.total_tokens if reply.estimated else 0,
        )
        with self._lock:
            self._latencies.append(reply.elapsed_s)
        return reply

    def _backoff(self, attempt: int) -> float:
        return min(self.config.backoff_max_s, self.config.backoff_s * 2.0 ** (attempt - 1))

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        env = os.environ if self._environ is None else self._environ
        key = env.get(self.config.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _attempt(
        self, payload: bytes, attempt: int, end: float, retries: int | None = None
    ) -> LLMReply | float:
        """One HTTP exchange (ending by ``end`` at the latest): a reply, or the seconds to
        wait before retrying."""
        limit = min(self.config.timeout_s, end - self._monotonic())
        if limit <= 0:
            raise LLMUnavailable(
                f"{self._url}: no answer within the call's deadline of"
                f" {self.config.deadline_s:g} s ({attempt - 1} attempt(s))"
            )
        can_retry = attempt <= (self.config.max_retries if retries is None else retries)
        deadline = self._monotonic() + limit
        try:
            with self._http.stream(
                "POST",
                self._url,
                content=payload,
                headers=self._headers(),
                timeout=httpx.Timeout(limit),
            ) as r:
                status = r.status_code
                retry_after = _retry_after(r.headers.get("retry-after"))
                declared = r.headers.get("content-length")
                if (
                    declared is not None
                    and declared.isdigit()
                    and int(declared) > self.config.max_response_bytes
                ):
                    raise LLMBadResponse(
                        f"response of {int(declared)} bytes exceeds the cap of "
                        f"{self.config.max_response_bytes} bytes"
                    )
                body = self._read_body(r, deadline)
        except (httpx.TimeoutException, _Timeout) as exc:
            sent = not isinstance(exc, httpx.ConnectTimeout)
            if can_retry and (self.config.retry_timeouts or not sent):
                return self._backoff(attempt)
            what = "deadline" if isinstance(exc, _Timeout) else type(exc).__name__
            why = (
                "; not retried: the server may still be computing it" if can_retry and sent else ""
            )
            raise LLMUnavailable(
                f"{self._url}: no response within {limit:g} s ({what}) after"
                f" {attempt} attempt(s){why}"
            ) from None
        except httpx.TransportError as exc:
            # Connect refused, reset, DNS failure, protocol garbage at the HTTP level.
            if can_retry:
                return self._backoff(attempt)
            raise LLMUnavailable(
                f"{self._url}: {type(exc).__name__}: {exc} after {attempt} attempt(s)"
            ) from None

        if status == 429:
            if retry_after is not None and retry_after > self.config.retry_after_max_s:
                raise LLMHTTPError(
                    status, _excerpt(body), retry_after, note=f"Retry-After {retry_after:g} s"
                )
            if can_retry:
                return retry_after if retry_after is not None else self._backoff(attempt)
            raise LLMHTTPError(status, _excerpt(body), retry_after, note=f"{attempt} attempt(s)")
        if status >= 500:
            if can_retry:
                # A 503 may say when to come back; a long wait falls back to the backoff.
                if retry_after is not None and retry_after <= self.config.retry_after_max_s:
                    return retry_after
                return self._backoff(attempt)
            raise LLMHTTPError(status, _excerpt(body), retry_after, note=f"{attempt} attempt(s)")
        if status >= 300:
            raise LLMHTTPError(status, _excerpt(body), retry_after)
        return self._parse(body)

    def _read_body(self, response: httpx.Response, deadline: float) -> bytes:
        cap = self.config.max_response_bytes
        parts: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > cap:
                raise LLMBadResponse(f"response body exceeds the cap of {cap} bytes")
            parts.append(chunk)
            if self._monotonic() > deadline:
                raise _Timeout
        return b"".join(parts)

    def _parse(self, body: bytes) -> LLMReply:
        try:
            completion = _DECODE_COMPLETION.decode(body)
        except msgspec.DecodeError as exc:
            raise LLMBadResponse(f"not a chat completion ({exc}): {_excerpt(body)!r}") from None
        if not completion.choices:
            raise LLMBadResponse(f"no choices in the response: {_excerpt(body)!r}")
        choice = completion.choices[0]
        text = choice.message.content if choice.message is not None else None
        if text is None:
            text = choice.text
        if text is None or not text.strip():
            raise LLMBadResponse("empty completion content")
        usage = completion.usage
        counts = (
            (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
            if usage is not None
            else (None, None, None)
        )
        estimated = counts[0] is None or counts[1] is None
        prompt, comp = max(0, counts[0] or 0), max(0, counts[1] or 0)
        total = counts[2] if counts[2] is not None and counts[2] >= 0 else prompt + comp
        return LLMReply(
            text=text.strip(),
            prompt_tokens=prompt,
            completion_tokens=comp,
            total_tokens=total,
            model=completion.model or self.config.model,
            attempts=1,
            elapsed_s=0.0,
            estimated=estimated,
            finish_reason=choice.finish_reason or "",
        )


def usage_of(llm: LLMClient | None) -> LLMUsage | None:
    """The client's running totals (None without a model)."""
    return llm.total_usage if llm is not None else None


def tokens_since(llm: LLMClient | None, before: LLMUsage | None, reported: int) -> tuple[int, int]:
    """Tokens the model spent since ``before`` (the client's own totals, which hold
    the server's ``usage`` or a marked estimate) and how many of them are estimates.
    Without a model: ``reported`` (what the response said)."""
    after = usage_of(llm)
    if before is None or after is None:
        return reported, 0
    return (
        after.total_tokens - before.total_tokens,
        after.estimated_tokens - before.estimated_tokens,
    )
