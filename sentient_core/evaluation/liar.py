"""The lying model of the lying-source scenario (:mod:`sentient_core.evaluation.lying`):
wrong values of the right shape, and a loopback OpenAI-compatible server that says them.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sentient_core.errors import ArgumentError

__all__ = ["MODEL", "LyingServer", "lie_about", "sentence"]

MODEL = "liar"


def lie_about(answer: str) -> str:
    """A wrong value of the same shape that never contains the right one: a version's
    last number + 7, a date + 3 days, a word's letters moved 7 places in the alphabet."""
    m = re.fullmatch(r"(\d{1,2}) (\w{3} \d{4})", answer)
    nums = list(re.finditer(r"\d+", answer))
    if m:
        lie = f"{(int(m.group(1)) + 3 - 1) % 28 + 1:02d} {m.group(2)}"
    elif nums:
        last = nums[-1]
        lie = answer[: last.start()] + str(int(last.group(0)) + 7) + answer[last.end() :]
    else:
        # "<answer>-wrong" would still hold the answer, and be scored right.
        lie = "".join(_shift(c) for c in answer)
    if not answer.strip() or answer.casefold() in lie.casefold():
        raise ArgumentError(f"no lie about {answer!r} leaves the answer out")
    return lie


def _shift(c: str) -> str:
    """An ASCII letter 7 places on in the alphabet (same case); anything else as it is."""
    for base in (65, 97):
        if base <= ord(c) < base + 26:
            return chr(base + (ord(c) - base + 7) % 26)
    return c


def sentence(q: str, value: str) -> str:
    """A one-line answer naming ``value`` for a Debian changelog question."""
    m = re.match(r"Which version of the Debian (\S+) package fixed (\S+)\?$", q)
    if m:
        return f"The Debian {m.group(1)} package fixed {m.group(2)} in version {value}."
    m = re.match(r"On which date was version (\S+) of the Debian (\S+) package uploaded\?$", q)
    if m:
        return f"Version {m.group(1)} of the Debian {m.group(2)} package was uploaded on {value}."
    return f"{q.rstrip('?')}: {value}."


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        messages = body.get("messages") or []
        last = str(messages[-1].get("content", "")) if messages else ""
        first = str(messages[0].get("content", "")) if messages else ""
        if body.get("response_format") or "verdict" in first.lower():
            # A judge's check: the model says "supported" (a judge may only lower a verdict).
            text = json.dumps({"verdict": "supported"})
        elif "summarize" in first.lower():
            text = last[:300]  # an extractive "summary": the text's start
        else:
            text = self.server.owner.answer_for(last)
        words = len(last.split()) + len(text.split())
        data = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "model": MODEL,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": len(last.split()),
                    "completion_tokens": len(text.split()),
                    "total_tokens": words,
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: LyingServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner


class LyingServer:
    """A loopback chat-completions server answering from ``replies`` (question → answer;
    the first question found in the last user message), else "I don't know"."""

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = dict(replies)
        self.asked: Counter[str] = Counter()
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def answer_for(self, message: str) -> str:
        for q, a in self.replies.items():
            if q.lower() in message.lower():
                self.asked[q] += 1
                return a
        return "I don't know"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> LyingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
