"""The episode comparison in a real browser: a person plays an episode, forks it at step 1, plays
a different step 2 in the fork, opens the comparison from the fork's page and sees the two
episodes side by side with step 2 marked as the first divergence (identical steps collapsed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser


def _step(page: Any, message: str, n: int) -> None:
    page.fill('[id="f-a.message"]', message)
    page.click("#step-button")
    page.wait_for_selector(f"#observation .badge.step:text('step {n}')")


def test_fork_play_another_step_and_compare(page: Any, studio_e2e: tuple[str, Path], echo_url: str,
                                            shot: Any) -> None:  # fmt: skip
    url, _data = studio_e2e
    page.goto(f"{url}/envs")
    page.fill("#attach-url", echo_url)
    page.click("#attach-form button[type=submit]")
    rid = page.wait_for_selector(f'#running tr[data-status="attached"]:has-text("{echo_url}")').get_attribute(
        "data-runtime")
    page.goto(f"{url}/play/{rid}")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    for n, message in enumerate(["alpha", "bravo", "charlie"], 1):
        _step(page, message, n)
    page.click("#play-episode a")
    page.wait_for_selector("#step-view")
    parent = page.get_attribute("#episode", "data-episode")

    page.locator("#step-slider").fill("1")
    page.wait_for_selector('#step-view[data-index="1"]:not(.htmx-added)')
    page.click("#fork-button")
    page.wait_for_url(f"**/play/{rid}?session=*")
    _step(page, "a different way", 2)
    page.click("#play-episode a.mono >> nth=0")
    page.wait_for_selector("#fork-parent")
    fork = page.get_attribute("#episode", "data-episode")
    assert fork != parent

    page.click("#compare-parent")
    page.wait_for_selector("#compare-rows")
    assert page.get_attribute("#cmp-a", "data-episode") == parent
    assert page.get_attribute("#cmp-b", "data-episode") == fork
    assert "B is a fork of A at step 1" in page.inner_text("#compare-summary")
    assert "first differ at step 2" in page.inner_text("#divergence-line")
    marked = page.locator(".cmp-row.first-divergence")
    assert marked.count() == 1 and marked.get_attribute("data-index") == "2"
    assert marked.locator("#first-divergence-badge").is_visible()
    assert "bravo" in marked.inner_text() and "a different way" in marked.inner_text()
    assert page.locator("#cmp-step-1").get_attribute("open") is None  # identical: collapsed
    assert page.locator("#cmp-step-3").get_attribute("data-differs") == "missing"
    page.click("#divergence-line a")
    page.wait_for_url("**#cmp-step-2")
    shot(page, "1-compare", narrow=True)
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0

    page.click("#cmp-step-1 > summary")  # an identical step opens on a click
    assert page.locator("#cmp-step-1 .cmp-side-a .cmp-action").inner_text().find("alpha") >= 0
    page.click("#compare-swap")
    page.wait_for_selector("#compare-rows")
    assert page.get_attribute("#cmp-a", "data-episode") == fork
