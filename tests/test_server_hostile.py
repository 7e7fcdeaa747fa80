"""The hostile set against a real ``cli.py serve`` child, and the table the docs show.

Every attack of :mod:`tests.hostile` must get what it expects; the server's
log must hold no traceback and no 5xx over the run (10,000 fuzzed parameter
values included); ``docs/security.md`` must list exactly these attacks.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hostile import FUZZ_PARAMS, close_and_check, launch, run_all
from tests.servers.sentient import served

DOCS = Path(__file__).resolve().parent.parent / "docs" / "security.md"


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    with launch(tmp_path_factory.mktemp("hostile")) as target:
        found = run_all(target, fuzz_values=10_000)
        found += close_and_check(target)
    return found


@pytest.mark.slow
def test_every_attack_gets_what_it_must(rows):
    bad = [
        f"{r.attack}: expected {r.expected}, got {r.observed} {r.detail}" for r in rows if not r.ok
    ]
    assert not bad, "\n".join(bad)
    assert len(rows) >= 80


def _doc_rows(doc: Path = DOCS) -> list[tuple[str, str, str]]:
    text = doc.read_text()
    start = text.index("<!-- hostile-table -->")
    end = text.index("<!-- /hostile-table -->")
    out = []
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 4 and cells[0] not in ("group", "---"):
            out.append((cells[0], cells[1].replace("\\|", "|"), cells[2]))
    return out


@pytest.mark.slow
def test_the_docs_table_lists_exactly_these_attacks(rows):
    # Only the attack and what it must get are compared: observed figures vary by run.
    assert _doc_rows() == [(r.group, r.attack, r.expected) for r in rows]


@pytest.mark.slow
def test_security_table_write_replaces_only_the_table(rows, tmp_path):
    """What `PYTHONPATH=. python bench/security_table.py --write` does with a run of the set:
    this run's table between the markers of docs/security.md, the rest of the page as it was."""
    from bench.security_table import END, START, write_table
    from tests.hostile import table

    doc = tmp_path / "security.md"
    before = DOCS.read_text()
    doc.write_text(before.replace(START + "\n", START + "\n| stale | row | 0 | 0 |\n"))
    write_table(doc, table(rows))
    after = doc.read_text()
    assert _doc_rows(doc) == [(r.group, r.attack, r.expected) for r in rows]
    assert after.split(START)[0] == before.split(START)[0]
    assert after.split(END)[1] == before.split(END)[1]
    assert "| stale |" not in after


# -- a property test: random values for every endpoint's parameters ------------------------


class _Tracebacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.errors.append(record.getMessage())


_VALUES = st.one_of(
    st.text(max_size=40),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "nan", "inf", "\u00b2", "\u0661", "9" * 80, "true", "../x.txt"]),
)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with served(tmp_path_factory.mktemp("fuzz"), "max_body_bytes = 4096\n") as s:
        yield s


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    endpoint=st.sampled_from(sorted(FUZZ_PARAMS.items())),
    values=st.lists(_VALUES, min_size=1, max_size=4),
    with_token=st.booleans(),
)
def test_random_parameter_values_never_get_a_5xx(live, endpoint, values, with_token):
    (method, path), names = endpoint
    params = dict(zip(names, values, strict=False))
    client = live.client if with_token else live.anon
    handler = _Tracebacks()
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        content = b"x" if method == "POST" else None
        with client.stream(method, path, params=params, content=content) as r:
            status = r.status_code
    except httpx.HTTPError as exc:  # a broken connection is as bad as a 500
        pytest.fail(f"{method} {path} {params!r}: {exc!r}")
    finally:
        logger.removeHandler(handler)
    assert status < 500, (method, path, params, status)
    assert not handler.errors, handler.errors
