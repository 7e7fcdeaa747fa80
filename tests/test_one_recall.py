"""One recall: the CLI, the server and ``Core.recall`` return the same ids for the same
store and query under every rank, with the same default (the learned scorer)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentient_core.cli import main
from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.recall import DEFAULT_RANK, RANKS, Ranking
from tests.servers.sentient import served

DOCS = {
    "tides.txt": "Ocean tides follow the moon. Spring tides come when sun and moon align; neap"
    " tides at the quarter moons. Tidal range is largest at spring tides.",
    "moon.txt": "The moon orbits the earth every 27.3 days. Its gravity raises the tides, and"
    " its phases run from new moon to full moon.",
    "bees.txt": "Honey bees dance to tell the direction of flowers. The waggle dance angle"
    " encodes the direction relative to the sun.",
    "sun.txt": "The sun is a star. Its light takes eight minutes to reach the earth, and its"
    " gravity, with the moon's, shapes the tides.",
    "magma.txt": "Basaltic magma is runny; rhyolitic magma is viscous and explosive. Volcanoes"
    " erupt when magma rises.",
}
QUERIES = ["What raises the tides?", "how do bees tell direction", "moon phases", "explosive magma"]


def _ids(hits) -> list[int]:
    return [h.record.id for h in hits]


def test_cli_server_and_core_rank_alike_under_every_rank(tmp_path, capsys):
    want_server: dict[tuple[str, str], list[int]] = {}
    with served(tmp_path) as s:
        for name, text in DOCS.items():
            assert s.client.post(f"/ingest?name={name}", content=text.encode()).is_success
        data = s.host.core.data_dir
        for rank in RANKS:
            for q in QUERIES:
                r = s.client.get("/recall", params={"q": q, "k": 5, "rank": rank})
                assert r.status_code == 200, r.text
                want_server[rank, q] = [h["id"] for h in r.json()["hits"]]
        default = s.client.get("/recall", params={"q": QUERIES[0], "k": 5}).json()
        assert [h["id"] for h in default["hits"]] == want_server[DEFAULT_RANK, QUERIES[0]]
    with Core(data, readonly=True) as core:
        api = {(rank, q): _ids(core.recall(q, 5, rank=rank)) for rank in RANKS for q in QUERIES}
        assert _ids(core.recall(QUERIES[0], 5)) == api[DEFAULT_RANK, QUERIES[0]]
    cli = {}
    for rank in RANKS:
        for q in QUERIES:
            args = ["recall", q, "-k", "5", "--rank", rank, "--json", "--no-touch"]
            assert main([*args, "--data-dir", str(data)]) == 0
            cli[rank, q] = [row["id"] for row in json.loads(capsys.readouterr().out)]
    assert api == want_server == cli
    # No rank given: the CLI, the server and Core.recall all mean the same one.
    assert (
        main(["recall", QUERIES[0], "-k", "5", "--json", "--no-touch", "--data-dir", str(data)])
        == 0
    )
    assert [row["id"] for row in json.loads(capsys.readouterr().out)] == api[
        DEFAULT_RANK, QUERIES[0]
    ]
    # The ranks are not all one ranking in disguise on this store.
    assert len({tuple(v) for k, v in api.items() if k[1] == QUERIES[0]}) > 1
    assert all(api[r, q] for r in RANKS for q in QUERIES)


def test_a_ranking_of_ones_own_plugs_in(tmp_path):
    class Newest:
        name = "newest"

        def __init__(self, core: Core) -> None:
            self.core = core

        def hits(self, query, k, *, threshold, touch):
            return [h for h in self.core.memory.recall(query, k=50, touch=False, rank="bm25")][
                ::-1
            ][:k]

    with Core(tmp_path / "data") as core:
        for text in DOCS.values():
            core.memory.store(text)
        mine = Newest(core)
        assert isinstance(mine, Ranking)
        got = core.recall("tides moon", 3, rank=mine)
        base = core.recall("tides moon", 50, rank="bm25")
        assert _ids(got) == _ids(base)[::-1][:3]
        with pytest.raises(ArgumentError, match="hybrid, bm25 or cosine"):
            core.recall("tides", rank="nonsense")
        with pytest.raises(ArgumentError, match="empty"):
            core.recall("   ")
        code = core.memory.query_code("tides moon")
        assert code is not None and _ids(core.recall(code, 3, rank="cosine"))
        assert isinstance(code, np.ndarray)
