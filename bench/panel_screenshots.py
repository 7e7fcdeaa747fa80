"""Screenshots of the panel, idle and while learning (Debian's headless chromium).

Serves a fresh store with the default offline learner (Python's own docs),
takes ``panel-idle.png``, starts the learner, asks a question, waits for
``--iterations`` iterations and takes ``panel-learning.png`` (full page).

    PYTHONPATH=. python bench/panel_screenshots.py OUT_DIR [--iterations 25]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from sentient_core.config import load
from sentient_core.server import Server
from tests.servers.browser import Browser


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--iterations", type=int, default=25)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    browser = Browser()
    try:
        with tempfile.TemporaryDirectory(prefix="panel-shots-") as tmp:
            data = Path(tmp) / "data"
            data.mkdir()
            (data / "sentient.toml").write_text("[learner]\ninterval_s = 0.3\n[server]\nport = 0\n")
            server = Server(data, load(data, env={}), env={}).start()
            try:
                d = browser.driver
                d.set_window_size(1280, 2300)
                d.get(server.login_url())
                browser.wait(lambda: browser.text("conn") == "live", what="the stream")
                d.save_screenshot(str(args.out / "panel-idle.png"))
                d.find_element("id", "ask-input").send_keys("What is a generator in Python?\n")
                d.find_element("id", "start").click()
                browser.wait(
                    lambda: len(browser.log_items("iteration")) >= args.iterations,
                    timeout=600,
                    what=f"{args.iterations} iterations",
                )
                browser.wait(lambda: browser.text("state") == "running", what="status")
                d.execute_script("document.getElementById('log').scrollTop = 1e9")
                d.save_screenshot(str(args.out / "panel-learning.png"))
                d.find_element("id", "stop").click()
                browser.wait(lambda: browser.text("state") == "idle", what="stopped")
            finally:
                server.stop()
    finally:
        browser.quit()
    for name in ("panel-idle.png", "panel-learning.png"):
        print(args.out / name)


if __name__ == "__main__":
    main()
