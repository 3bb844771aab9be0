"""The studio's Play page in a real browser with an MCP environment: call a tool from its form."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests._require import require
from tests.studio.conftest import recorded_tool_names
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


def test_play_shows_the_envs_own_view_and_its_buttons_step(page: Any, studio_e2e: tuple[str, Path], shot: Any) -> None:
    """render_web in a sandboxed frame, drawn by the runtime's env for this session; a web_actions
    button is a recorded step."""
    require(importlib.util.find_spec("fastmcp") is not None, "fastmcp (the mcp extra)")
    url, data = studio_e2e
    rid = _launch(page, url, "toolbox", "process")
    page.goto(f"{url}/play/{rid}")
    assert page.locator("#web-view iframe").count() == 0  # nothing to draw before a reset
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    page.wait_for_function("document.querySelector('#web-view iframe')?.srcdoc.includes('No notes yet')")
    assert page.locator("#web-view iframe").get_attribute("sandbox") == ""
    note = page.locator('#mcp-panel [data-tool="add_note"]')
    note.locator('input[name$=".text"]').fill("seen in the view")
    note.locator("button[type=submit]").click()
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    page.wait_for_function("document.querySelector('#web-view iframe')?.srcdoc.includes('seen in the view')")
    assert page.frame_locator("#web-view iframe").locator("li").inner_text() == "seen in the view"
    page.locator("#web-view button", has_text="Read notes").click()
    page.wait_for_selector("#observation .badge.step:text('step 2')")
    assert "seen in the view" in page.inner_text("#observation")
    shot(page, "play-web-view", narrow=True)
    eid = page.locator("#play-episode a").first.get_attribute("href").rsplit("/", 1)[1]
    assert recorded_tool_names(data, eid) == ["add_note", "notes"]
