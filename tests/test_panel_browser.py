"""The panel in a real browser (Debian's headless chromium): start, live events, a question,
pause (no iteration while paused), resume, stop, and reconnection after a server restart."""

from __future__ import annotations

import pytest

from sentient_core.config import load
from sentient_core.server import Server
from tests.servers.browser import Browser, require_chromium
from tests.servers.sentient import served

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()  # skipped (with the reason) without it; a failure when CI=true


QUESTION = "How do honey bees communicate the direction of flowers?"


def _click(browser: Browser, element_id: str) -> None:
    from selenium.webdriver.common.by import By

    browser.driver.find_element(By.ID, element_id).click()


def test_panel_drives_the_learner_live_and_reconnects(tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser = Browser()
    try:
        with served(tmp_path, interval=0.3) as s:
            d = browser.driver
            d.get(s.url + "/")  # no credentials: the login page, no data
            assert "Log in" in d.title + d.find_element(By.TAG_NAME, "h1").text
            d.get(s.server.login_url())  # the one-time link serve prints
            assert d.current_url == s.url + "/"  # the code is gone from the address bar
            browser.wait(lambda: browser.text("conn") == "live", what="the stream")
            assert browser.text("state") == "idle"
            # Meta-memory is on: its three tables are shown (empty on a new store).
            browser.wait(
                lambda: d.find_element(By.ID, "meta-memory").get_attribute("hidden") is None,
                what="the meta-memory tables",
            )
            captions = [
                c.text for c in d.find_elements(By.CSS_SELECTOR, "#meta-tables table caption")
            ]
            assert captions == ["sources", "debts", "wisdom"]
            d.save_screenshot(str(tmp_path / "panel-idle.png"))

            # Ask by keyboard (type, Enter) before starting: it is queued, then asked first.
            box = d.find_element(By.ID, "ask-input")
            box.send_keys(QUESTION, Keys.ENTER)
            browser.wait(
                lambda: any(
                    "question queued: " + QUESTION[:40] in t for t in browser.log_items("question")
                ),
                what="the question's queued event",
            )
            _click(browser, "start")
            browser.wait(lambda: browser.log_items("iteration"), what="a live iteration event")
            assert browser.log_items("session")[0].endswith("session started (100 iteration(s))")
            browser.wait(lambda: browser.text("state") == "running", what="running")
            browser.wait(
                lambda: any(QUESTION[:40] in t for t in browser.log_items("query")),
                what="the query for the question",
            )
            browser.wait(lambda: browser.log_items("integrate"), what="an answer integrated")
            browser.wait(
                lambda: any("success" in t for t in browser.log_items("judge")), what="a verdict"
            )
            # A question asked while it runs gets its event too (queued, or answered by memory).
            box.send_keys("What makes rhyolitic magma explosive?", Keys.ENTER)
            browser.wait(
                lambda: any("rhyolitic" in t for t in browser.log_items("question")),
                what="the second question's event",
            )
            # Charts drew from the stream, with text alternatives (read through wait: a chart
            # redrawn by the next event replaces its summary element under the reader).
            for chart, words in (("coherence", "iteration"), ("smf", "strongest axes")):
                browser.wait(
                    lambda chart=chart, words=words: (
                        words in d.find_element(By.CSS_SELECTOR, f"#chart-{chart} .summary").text
                    ),
                    what=f"the {chart} chart's summary",
                )
            d.save_screenshot(str(tmp_path / "panel-learning.png"))
            # Meta-memory's events read as a line, like the live view's, not raw JSON.
            from sentient_core.events import MetaMemoryEvent

            bus = s.host.learner.events
            bus.emitter(session="panel-test").emit(
                MetaMemoryEvent,
                component="sources",
                action="punished",
                subject="llm:127.0.0.1/liar",
                domain="curl",
                before=1.0,
                after=0.8,
            )
            bus.flush()
            browser.wait(lambda: browser.log_items("metamemory"), what="the meta-memory event")
            assert browser.log_items("metamemory")[-1].endswith(
                "meta-memory sources punished: llm:127.0.0.1/liar [curl] 1.000 → 0.800"
            )
            # Every event kind the loop emits has a readable line (the raw-JSON
            # fallback is for kinds the panel does not know).
            raw = [t for t in browser.log_items() if '{"kind"' in t]
            assert raw == [], raw[:3]

            _click(browser, "pause")
            browser.wait(lambda: browser.text("state") == "paused", what="paused")
            parked = s.host.learner.iteration
            shown = len(browser.log_items("iteration"))
            import time

            time.sleep(1.5)  # five intervals: an iteration would have started and shown up
            assert s.host.learner.iteration == parked
            assert len(browser.log_items("iteration")) == shown
            assert not d.find_element(By.ID, "resume").get_attribute("disabled")

            _click(browser, "resume")
            browser.wait(
                lambda: len(browser.log_items("iteration")) > shown, what="iterations again"
            )
            _click(browser, "stop")
            browser.wait(lambda: browser.text("state") == "idle", what="stopped")
            assert any(t.endswith("session ended") for t in browser.log_items("session"))

            # Restart the server on the same port: the old session is gone with it, the
            # page says so; the new server's one-time link logs in again.
            data, port = s.host.core.data_dir, s.server.port
            s.server.stop()
            browser.wait(lambda: browser.text("conn") != "live", what="the outage shown")
            again = Server(
                data, load(data, env={}, flags={"server.port": (port, "--port")}), env={}
            )
            again.start()
            try:
                browser.wait(lambda: browser.text("conn") == "logged out", what="logged out")
                assert "Log in again" in browser.text("message")
                d.get(again.login_url())
                browser.wait(lambda: browser.text("conn") == "live", what="reconnected")
                before = len(browser.log_items())
                # By keyboard: Tab from the top of the page to Start, then Enter.
                d.find_element(By.TAG_NAME, "body").click()
                for _ in range(10):
                    if d.switch_to.active_element.get_attribute("id") == "start":
                        break
                    d.switch_to.active_element.send_keys(Keys.TAB)
                assert d.switch_to.active_element.get_attribute("id") == "start"
                d.switch_to.active_element.send_keys(Keys.ENTER)
                browser.wait(lambda: len(browser.log_items()) > before + 3, what="new events")
                browser.wait(lambda: browser.text("state") == "running", what="running again")
                _click(browser, "stop")
                browser.wait(lambda: browser.text("state") == "idle", what="stopped again")
            finally:
                again.stop()
    finally:
        browser.quit()


def test_panel_recall_shows_a_traces_neighbours(tmp_path):
    """The Recall section: a query by keyboard, then a hit's neighbours in the link graph
    (``GET /traces/{id}/links``), the answered one marked."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser = Browser()
    try:
        with served(tmp_path) as s:
            memory = s.host.core.memory
            texts = [
                "Ocean tides follow the moon; spring tides come when sun and moon align.",
                "Neap tides come at quarter moons, when sun and moon pull at right angles.",
                "A storm surge lifts the sea above the predicted tide in onshore winds.",
            ]
            ids = [
                memory.store(t, kind="learned", topic=f"tide {i}").id for i, t in enumerate(texts)
            ]
            # What reflection writes between related learned traces.
            memory.link(ids[0], ids[1], weight=0.9)
            memory.link(ids[0], ids[2], weight=0.8)
            book = s.host.learner.curiosity.book
            book.register("What is known about neap tides?", origin="curiosity", gap_type="link")
            book.update("What is known about neap tides?", status="answered", answered_by=ids[1])

            d = browser.driver
            d.get(s.server.login_url())
            browser.wait(lambda: browser.text("conn") == "live", what="the stream")
            d.find_element(By.ID, "recall-input").send_keys("spring tides moon", Keys.ENTER)
            browser.wait(lambda: d.find_elements(By.ID, f"hit-{ids[0]}"), what="the recalled trace")
            hit = d.find_element(By.ID, f"hit-{ids[0]}")
            assert "spring tides" in hit.text
            hit.find_element(By.TAG_NAME, "button").click()
            browser.wait(lambda: d.find_elements(By.ID, f"links-{ids[0]}"), what="neighbours")
            items = [li.text for li in d.find_elements(By.CSS_SELECTOR, f"#links-{ids[0]} li")]
            assert len(items) == 2
            assert items[0].startswith(f"#{ids[1]} (link 0.90, answered)")
            assert items[1].startswith(f"#{ids[2]} (link 0.80, not answered)")
            assert "storm surge" in items[1]
            assert "2 neighbour(s)" in hit.find_element(By.TAG_NAME, "button").text
            d.save_screenshot(str(tmp_path / "panel-neighbours.png"))
    finally:
        browser.quit()
