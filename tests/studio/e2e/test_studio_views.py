"""Real browser: the env's reset form and State panel in Play, observations a person can read
(pre blocks, a shown image, folded logs, numbers and booleans) on /web, Play and the episode
page, and the code editor (Tab indents, Ctrl+Enter steps)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.webui.rich_env import rich_app
from tests.webui.servers import serve

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def rich_url() -> Iterator[str]:
    with serve(rich_app()) as url:
        yield url


def _readable(page: Any, root: str) -> None:
    """The rich env's observation under ``root`` reads as a person expects."""
    stdout = page.locator(f'{root} .obs-field[data-key="stdout"] pre')
    assert stdout.inner_text().splitlines()[0] == ">>> ran"
    assert page.locator(f'{root} .obs-field[data-key="board"] pre').inner_text() == "X|O\n-+-\nO|X"
    img = page.locator(f'{root} .obs-field[data-key="frame"] img')
    assert img.evaluate("i => i.complete && i.naturalWidth") == 96
    log = page.locator(f'{root} .obs-field[data-key="log"] details.v-folded')
    assert log.get_attribute("open") is None and "60 lines" in log.locator("summary").inner_text()
    assert not log.locator("pre").is_visible()
    log.locator("summary").click()
    assert log.locator("pre").is_visible()
    assert page.locator(f'{root} .obs-field[data-key="ok"] .v-bool').inner_text() == "true"
    assert page.locator(f'{root} .obs-field[data-key="score"] .v-number').inner_text() in ("0.25", "0.5")


def _code_editor(page: Any) -> None:
    """Tab indents in the code field; Ctrl+Enter sends the step."""
    area = page.locator('textarea[name="a.code"]')
    assert area.get_attribute("data-code-editor") is not None
    assert area.evaluate("a => getComputedStyle(a).fontFamily").lower().find("mono") >= 0
    area.fill("")
    area.click()
    page.keyboard.type("for i in range(2):")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.type("print(i)")
    assert area.input_value() == "for i in range(2):\n    print(i)"
    assert area.evaluate("a => document.activeElement === a")
    page.keyboard.press("Shift+Tab")
    assert area.input_value() == "for i in range(2):\nprint(i)"
    page.keyboard.press("Home")
    page.keyboard.press("Tab")
    assert area.input_value() == "for i in range(2):\n    print(i)"
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")  # after Escape, Tab leaves the editor for the next field
    assert page.locator('textarea[name="a.notes"]').evaluate("t => document.activeElement === t")
    page.keyboard.type("first\nsecond")  # a multi-line field takes newlines
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    assert "    print(i)" in page.locator('#observation .obs-field[data-key="stdout"] pre').inner_text()


def test_web_page_renders_the_rich_env(page: Any, rich_url: str, shot: Any) -> None:
    page.goto(f"{rich_url}/web")
    page.wait_for_selector("#step-form")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    _code_editor(page)
    _readable(page, "#observation")
    shot(page, "web")


def test_play_has_reset_form_state_and_readable_observations(page: Any, studio_e2e: tuple[str, Path],
                                                            rich_url: str, shot: Any) -> None:
    url, _ = studio_e2e
    page.goto(f"{url}/envs")
    page.fill("#attach-url", rich_url)
    page.click("#attach-form button[type=submit]")
    row = page.wait_for_selector(f'#running tr[data-status="attached"]:has-text("{rich_url}")')
    rid = row.get_attribute("data-runtime")
    page.goto(f"{url}/play/{rid}")
    page.wait_for_selector("#reset-form")
    assert "Reset starts one" in page.inner_text("#state")
    page.fill('[id="f-r.difficulty"]', "4")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    assert "ready at difficulty 4" in page.inner_text("#observation")
    page.wait_for_selector('#state:has-text("difficulty")')
    state = page.inner_text("#state")
    assert "difficulty" in state and "4" in state
    _code_editor(page)
    _readable(page, "#observation")
    page.wait_for_selector('#state:has-text("last_code")')
    assert "print(i)" in page.inner_text("#state")
    shot(page, "play", narrow=True)

    page.click("#play-episode a")
    page.wait_for_selector("#step-view")
    page.locator("#step-slider").fill("1")
    page.wait_for_selector('#step-view[data-index="1"]:not(.htmx-added)')
    _readable(page, "#step-view .step-observation")
    assert page.locator("#live svg.chart").get_attribute("data-points") == "2"
    shot(page, "episode")
