"""The studio's Play page in a real browser with an MCP environment: call a tool from its form."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests._require import require
from tests.studio.e2e.test_studio_browser import _launch

pytestmark = pytest.mark.browser


def test_play_toolbox_tools(page: Any, studio_e2e: tuple[str, Path], shot: Any) -> None:
    require(importlib.util.find_spec("fastmcp") is not None, "fastmcp (the mcp extra)")
    url, _ = studio_e2e
    rid = _launch(page, url, "toolbox", "process")
    page.goto(f"{url}/play/{rid}")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    note = page.locator('#mcp-panel [data-tool="add_note"]')
    note.wait_for()
    note.locator('input[name$=".text"]').fill("played in the studio")
    note.locator("button[type=submit]").click()
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    page.wait_for_function("document.querySelector('[data-tool=add_note] .tool-result')?.innerText.trim() === '1'")
    assert "1 step" in page.inner_text("#play-episode")
    note.locator('input[name$=".text"]').fill(" ")
    note.locator("button[type=submit]").click()
    note.locator(".tool-error").wait_for()
    assert "a note needs some text" in note.locator(".tool-error").inner_text()
    page.wait_for_selector("#observation .badge.step:text('step 2')")
    shot(page, "mcp-play", narrow=True)
