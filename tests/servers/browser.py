"""Headless Debian chromium through Debian's chromedriver (selenium never downloads anything)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

INSTALL = "sudo apt-get install chromium chromium-driver"


def missing(paths: tuple[str, ...] = (CHROMIUM, CHROMEDRIVER)) -> list[str]:
    """The browser binaries that are not installed."""
    return [p for p in paths if not (os.path.isfile(p) and os.access(p, os.X_OK))]


def require_chromium(
    paths: tuple[str, ...] = (CHROMIUM, CHROMEDRIVER), env: Mapping[str, str] = os.environ
) -> None:
    """Skip the calling test when Debian's chromium is not installed, saying why.

    With ``CI=true`` it fails instead: CI installs chromium (``.ci/run``), so a
    missing one there is a broken setup that must not pass as a skip.
    """
    import pytest

    absent = missing(paths)
    if not absent:
        return
    why = f"the panel's browser test needs {' and '.join(absent)} ({INSTALL})"
    if env.get("CI", "").strip().lower() == "true":
        pytest.fail(f"CI=true but {why}: .ci/run installs them", pytrace=False)
    pytest.skip(why)


FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1800",
)


class Browser:
    """A chromium session with a fresh profile, closed (profile removed) by :meth:`quit`."""

    def __init__(self) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        os.environ.setdefault("SE_OFFLINE", "true")  # selenium-manager must not fetch anything
        self.profile = tempfile.mkdtemp(prefix="sentient-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self.profile}")
        self.driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))

    def wait(
        self, predicate: Callable[[], object], timeout: float = 60.0, what: str = ""
    ) -> object:
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = predicate()
            except Exception:  # the page is between renders
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what or predicate}")
            time.sleep(0.05)

    def text(self, element_id: str) -> str:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.ID, element_id).text

    def log_items(self, kind: str | None = None) -> list[str]:
        """The eavesdrop log's lines (of one event kind)."""
        script = (
            "return Array.from(document.querySelectorAll('#log li'))"
            + (f".filter(li => li.dataset.kind === {kind!r})" if kind else "")
            + ".map(li => li.textContent)"
        )
        return self.driver.execute_script(script)

    def quit(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)
