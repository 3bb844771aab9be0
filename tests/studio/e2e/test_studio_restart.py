"""A runtime restarted from its page shows "starting", then "healthy" with its new URL and a Play
button, without a reload (the summary polls itself while it starts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.studio.e2e.test_studio_browser import _launch

pytestmark = pytest.mark.browser


def test_restart_updates_badge_and_port_in_place(page: Any, studio_e2e: tuple[str, Path], shot: Any) -> None:
    url, _ = studio_e2e
    rid = _launch(page, url, "echo", "process")
    page.goto(f"{url}/envs/r/{rid}")
    page.wait_for_selector("#runtime-summary .badge.done")
    before = page.inner_text("#runtime-summary dl.facts")
    page.evaluate("window.__marker = 'same page'")  # a reload would drop it
    page.click("#restart-button")
    page.wait_for_selector('#runtime-summary[data-status="starting"]', state="attached")
    page.wait_for_selector('#runtime-summary[data-status="running"] .badge.done', timeout=120_000)
    after = page.inner_text("#runtime-summary dl.facts")
    assert page.evaluate("window.__marker") == "same page"
    assert after != before and "127.0.0.1:" in after  # the new port
    assert page.locator("#runtime-summary a:text('Play')").count() == 1
    shot(page, "1-restarted")
    page.click("#stop-button")
