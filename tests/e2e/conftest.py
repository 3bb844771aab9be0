"""One headless Debian Chromium per test session, driven by Playwright, against real servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_utils import launched_chromium
from tests.webui.servers import echo_app, serve, zoo_app

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "e2e"


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One browser for this package, closed before the next package's tests run."""
    with launched_chromium() as chromium:
        yield chromium


@pytest.fixture(scope="session")
def zoo_web() -> Iterator[str]:
    with serve(zoo_app()) as url:
        yield url


@pytest.fixture(scope="session")
def echo_web() -> Iterator[str]:
    with serve(echo_app()) as url:
        yield url


@pytest.fixture()
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.set_default_timeout(15_000)
    yield ctx
    ctx.close()


@pytest.fixture()
def page(context: Any) -> Iterator[Any]:
    """A fresh tab; uncaught JS exceptions and console errors fail the test.

    Chromium's "Failed to load resource" lines are expected: the page answers 4xx with fragments.
    """
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("console", lambda msg: msg.type == "error" and not msg.text.startswith("Failed to load resource")
           and errors.append(msg.text))
    yield tab
    assert errors == []


@pytest.fixture()
def shot(request: pytest.FixtureRequest) -> Any:
    """shot(page, label): save a full-page screenshot under test-artifacts/e2e/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(tab: Any, label: str = "") -> Path:
        name = request.node.name.replace("[", "-").replace("]", "") + (f"-{label}" if label else "")
        path = ARTIFACTS / f"{name}.png"
        tab.screenshot(path=str(path), full_page=True)
        return path

    return take
