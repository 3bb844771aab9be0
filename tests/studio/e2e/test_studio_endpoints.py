"""Model endpoints in a real browser: save one, Edit it (a temperature of 99 is a message under its
field and the form stays in edit mode), save the change, then Delete it (confirmed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser


def test_edit_and_delete_an_endpoint(page: Any, studio_e2e: tuple[str, Path]) -> None:
    url, _data = studio_e2e
    page.goto(f"{url}/models")
    page.fill("#ep-name", "browser-ep")
    page.fill("#ep-url", "http://127.0.0.1:9/v1")
    page.fill("#ep-model", "m-one")
    page.click("#endpoint-save")
    item = page.wait_for_selector('li[data-endpoint="browser-ep"]')
    assert "m-one" in item.inner_text()

    page.click('a[data-edit="browser-ep"]')
    page.wait_for_selector("#endpoint-form-title:has-text('Edit')")
    assert page.input_value("#ep-model") == "m-one"
    page.fill("#ep-temp", "99")
    page.evaluate("document.getElementById('ep-temp').removeAttribute('max')")  # past the browser's own check
    page.click("#endpoint-save")
    page.wait_for_selector("#ep-temp-error")
    assert "between" in page.inner_text("#ep-temp-error")
    assert page.input_value("#ep-model") == "m-one" and "Edit" in page.inner_text("#endpoint-form-title")
    page.fill("#ep-temp", "0.3")
    page.fill("#ep-model", "m-two")
    page.click("#endpoint-save")
    item = page.wait_for_selector('li[data-endpoint="browser-ep"]')
    assert "m-two" in item.inner_text() and "temperature 0.3" in item.inner_text()
    assert page.locator('li[data-endpoint]').count() == 1

    page.click('button[data-delete="browser-ep"]')  # the page fixture accepts the confirm()
    page.wait_for_selector('li[data-endpoint="browser-ep"]', state="detached")
    assert page.locator("#endpoint-form-title").inner_text() == "Save an endpoint"
