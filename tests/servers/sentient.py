"""A real ``serve`` for tests: uvicorn in a thread on a free loopback port, over a real store.

:func:`served` writes a ``sentient.toml`` (small offline corpus, fast interval),
starts :class:`sentient_core.server.Server`, and yields a :class:`Served` with
an httpx client that carries the token (``anon`` carries nothing).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from sentient_core.config import load
from sentient_core.server import Server

CORPUS = {
    "tides.md": "# Tides\n\nOcean tides are caused by the gravitational pull of the moon and the"
    " sun. Spring tides happen when the sun and moon align. Neap tides happen at quarter moons.",
    "bees.txt": "Honey bees communicate the direction of flowers with a waggle dance. The angle"
    " of the dance encodes the direction relative to the sun.",
    "volcano.txt": "Volcanoes erupt when magma rises through the crust. Basaltic magma is runny,"
    " while rhyolitic magma is viscous and explosive.",
    "generators.md": "# Generators\n\nA generator is a function that yields values lazily. Each"
    " call to next resumes the generator where it paused and runs to the next yield.",
}


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in CORPUS.items():
        (folder / name).write_text(text)
    return folder


def settings_text(corpus: Path, extra: str = "", interval: float = 0.05) -> str:
    return (
        f"[learner]\ninterval_s = {interval}\n\n"
        f'[chaperone]\ncorpus_dirs = ["{corpus}"]\ninclude_python_docs = false\n\n'
        f'[server]\nhost = "127.0.0.1"\nport = 0\nflush_delay_ms = 2\n' + extra
    )


class Served:
    """A running server and clients for it."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.url = server.url.rstrip("/")
        self.token = server.policy.token
        self.client = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )
        self.anon = httpx.Client(
            base_url=self.url,
            timeout=30,
            event_hooks={
                "response": [lambda r: self.anon.cookies.clear()]  # never a credential
            },
        )

    @property
    def host(self):
        return self.server.host

    def status(self) -> dict:
        r = self.client.get("/learning/status")
        r.raise_for_status()
        return r.json()

    def wait_for(self, predicate, timeout: float = 60.0, what: str = "condition") -> dict:
        """Poll the status until ``predicate(status)``; returns that status."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.status()
            if predicate(st):
                return st
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; last status {st['state']}")
            time.sleep(0.02)

    def close(self) -> None:
        self.client.close()
        self.anon.close()


@contextlib.contextmanager
def served(
    tmp_path: Path, extra: str = "", *, interval: float = 0.05, env: dict | None = None
) -> Iterator[Served]:
    """A server on ``tmp_path/data`` (settings file written there) with a small corpus."""
    data = tmp_path / "data"
    data.mkdir(parents=True, exist_ok=True)
    corpus = write_corpus(tmp_path / "corpus")
    (data / "sentient.toml").write_text(settings_text(corpus, extra, interval))
    environment = {} if env is None else env
    effective = load(data, env=environment)
    server = Server(data, effective, env=environment).start()
    handle = Served(server)
    try:
        yield handle
    finally:
        handle.close()
        server.stop()
