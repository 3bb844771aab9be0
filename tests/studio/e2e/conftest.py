"""Browser tests: one headless Debian Chromium per session (Playwright, never `playwright install`),
a real studio per module, screenshots under test-artifacts/studio/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_utils import launched_chromium
from tests.studio.conftest import make_settings, running_studio

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "studio"
WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 390, "height": 844}


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One browser for this package, closed before the next package's tests run."""
    with launched_chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def studio_e2e(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A studio without Docker (the process provider only); yields (url, data dir)."""
    data = tmp_path_factory.mktemp("studio-e2e")
    with running_studio(make_settings(data, project="e2e-process")) as url:
        yield url, data


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    """A fresh 1280x800 tab that accepts confirm() dialogs; uncaught JS errors fail the test."""
    ctx = browser.new_context(viewport=WIDE, accept_downloads=True)
    ctx.set_default_timeout(30_000)
    tab = ctx.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("dialog", lambda dialog: dialog.accept())
    yield tab
    ctx.close()
    assert errors == []


@pytest.fixture()
def shot(request: pytest.FixtureRequest) -> Any:
    """shot(page, label): a full-page screenshot at the current size, then (narrow=True) at 390 wide."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(tab: Any, label: str, *, narrow: bool = False) -> Path:
        path = ARTIFACTS / f"{request.node.name}-{label}.png"
        tab.screenshot(path=str(path), full_page=True)
        if narrow:
            tab.set_viewport_size(NARROW)
            tab.screenshot(path=str(ARTIFACTS / f"{request.node.name}-{label}-narrow.png"), full_page=True)
            tab.set_viewport_size(WIDE)
        return path

    return take
