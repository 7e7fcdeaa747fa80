"""A trace's neighbours over real HTTP (``GET /traces/{id}/links``) and ``GET /recall``'s
``spread`` (its default from ``server.recall_spread``)."""

from __future__ import annotations

from tests.servers.sentient import served

TEXTS = [
    "Ocean tides follow the moon; spring tides come when the sun and moon align.",
    "Neap tides come at quarter moons, when the sun and moon pull at right angles.",
    "A storm surge lifts the sea above the predicted tide in strong onshore winds.",
    "Honey bees dance to tell the hive where the flowers are.",
]


def _store(s) -> list[int]:
    memory = s.host.core.memory
    ids = [memory.store(t, kind="learned", topic=f"t{i}").id for i, t in enumerate(TEXTS)]
    # What reflection writes between related learned traces.
    memory.link(ids[0], ids[1], weight=0.9)
    memory.link(ids[0], ids[2], weight=0.8)
    book = s.host.learner.curiosity.book
    book.register("What is known about neap tides?", origin="curiosity", gap_type="link")
    book.update("What is known about neap tides?", status="answered", answered_by=ids[1])
    return ids


def test_trace_links_lists_neighbours_strongest_first(tmp_path):
    with served(tmp_path) as s:
        ids = _store(s)
        r = s.client.get(f"/traces/{ids[0]}/links")
        assert r.status_code == 200
        body = r.json()
        assert body["id"] == ids[0] and body["text"].startswith("Ocean tides")
        got = [(n["id"], n["weight"], n["answered"]) for n in body["neighbours"]]
        assert got == [(ids[1], 0.9, True), (ids[2], 0.8, False)]
        assert body["neighbours"][1]["text"].startswith("A storm surge")
        # Links are symmetric; an unlinked trace has none; an unknown one is a 404.
        back = s.client.get(f"/traces/{ids[1]}/links").json()["neighbours"]
        assert [n["id"] for n in back] == [ids[0]]
        assert s.client.get(f"/traces/{ids[3]}/links").json()["neighbours"] == []
        missing = s.client.get("/traces/999999/links")
        assert missing.status_code == 404 and missing.json()["error"] == "no such trace"
        assert s.client.get("/traces/x/links").status_code == 404
        assert s.client.get(f"/traces/{ids[0]}/links", params={"k": 1}).status_code == 400
        # The token is needed, as everywhere.
        assert s.anon.get(f"/traces/{ids[0]}/links").status_code == 401


def test_recall_spreads_along_links_when_asked_or_configured(tmp_path):
    with served(tmp_path) as s:
        ids = _store(s)
        # "storm surge" is not among the top 2 for this query without its link.
        plain = s.client.get("/recall", params={"q": "spring tides moon", "k": 2}).json()
        assert ids[2] not in [h["id"] for h in plain["hits"]]
        spread = s.client.get("/recall", params={"q": "spring tides moon", "k": 2, "spread": 1})
        got = [h["id"] for h in spread.json()["hits"]]
        # The best hit stays first; the last place (k // 5, at least 1) goes to the
        # seeds' linked neighbour.
        assert got == [plain["hits"][0]["id"], ids[2]]
        assert s.client.get("/recall", params={"q": "tides", "spread": 4}).status_code == 400
    with served(tmp_path / "configured", "recall_spread = 1\n") as s:
        ids = _store(s)
        configured = s.client.get("/recall", params={"q": "spring tides moon", "k": 2}).json()
        explicit = s.client.get("/recall", params={"q": "spring tides moon", "k": 2, "spread": 1})
        assert [h["id"] for h in configured["hits"]] == [h["id"] for h in explicit.json()["hits"]]
        off = s.client.get("/recall", params={"q": "spring tides moon", "k": 2, "spread": 0})
        assert [h["id"] for h in off.json()["hits"]] != [h["id"] for h in configured["hits"]]
