"""An error never kills a page (issue 23): in Chromium, a 2 MB message on Play answers a message in
the Action panel, the Observation panel stays, and the next ordinary Step works; an overlong tag
keeps the notes form and the typed notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.studio.e2e.test_studio_browser import _launch, _step

pytestmark = pytest.mark.browser


def _htmx_errors(page: Any) -> list[str]:
    page.evaluate("""() => { window.__htmxErrors = [];
        for (const name of ["htmx:targetError", "htmx:swapError", "htmx:responseError"]) {
            document.body.addEventListener(name, () => window.__htmxErrors.push(name)); } }""")
    return page.evaluate("() => window.__htmxErrors")


def test_two_megabyte_message_then_a_normal_step(page: Any, studio_e2e: tuple[str, Path], shot: Any) -> None:
    url, _ = studio_e2e
    rid = _launch(page, url, "echo", "process")
    page.goto(f"{url}/play/{rid}")
    page.wait_for_selector("#step-form")
    _htmx_errors(page)
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")

    page.evaluate("""() => { const box = document.getElementById("f-a.message");
        box.value = "x".repeat(2 * 1024 * 1024); box.dispatchEvent(new Event("input", {bubbles: true})); }""")
    page.click("#step-button")
    alert = page.wait_for_selector("#step-form .error-slot .fragment-error")
    assert "larger than the 1 MB limit" in alert.inner_text()
    assert page.locator("#observation").count() == 1
    assert page.locator("#observation .badge.step").inner_text() == "reset"  # the panel is untouched
    shot(page, "1-two-megabytes")

    _step(page, "hello", 1)  # the same form, the same target: it still works
    assert "hello" in page.inner_text("#observation")
    assert page.locator("#step-form .error-slot").count() == 0  # the slot empties on success
    assert page.locator("#observation").count() == 1
    assert page.evaluate("() => window.__htmxErrors") == []
    shot(page, "2-stepped-after")


def test_overlong_tag_keeps_the_typed_notes(page: Any, studio_e2e: tuple[str, Path]) -> None:
    url, _ = studio_e2e
    rid = _launch(page, url, "echo", "process")
    page.goto(f"{url}/play/{rid}")
    page.wait_for_selector("#step-form")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    _step(page, "hi", 1)
    page.click("#play-episode a")
    page.wait_for_selector("#notes")
    page.fill("#episode-notes", "my typed notes")
    page.fill("#episode-tags", "ok, " + "t" * 150)
    page.click("#save-notes")
    alert = page.wait_for_selector("#notes .error-slot .fragment-error")
    assert "at most 100 characters" in alert.inner_text()
    assert page.input_value("#episode-notes") == "my typed notes"
    page.fill("#episode-tags", "ok")
    page.click("#save-notes")
    page.wait_for_selector("#notes .badge.done:text('saved')")
    assert page.input_value("#episode-notes") == "my typed notes"


def test_seed_beyond_64_bits_then_reset_and_step(page: Any, studio_e2e: tuple[str, Path]) -> None:
    url, _ = studio_e2e
    rid = _launch(page, url, "echo", "process")
    page.goto(f"{url}/play/{rid}")
    page.wait_for_selector("#reset-form")
    _htmx_errors(page)
    page.fill('[id="f-r.seed"]', str(2**70))
    page.click("#reset-button")
    error = page.wait_for_selector("#reset-editor .field-errors")
    assert "must fit in 64 bits" in error.inner_text()
    assert page.locator("#observation").count() == 1
    page.fill('[id="f-r.seed"]', "7")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    _step(page, "after", 1)
    assert page.evaluate("() => window.__htmxErrors") == []
