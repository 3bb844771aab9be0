"""Launch Debian's Chromium through Playwright (never ``playwright install``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests._require import require

CHROMIUM = os.environ.get("OPENENV_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@contextlib.contextmanager
def launched_chromium() -> Iterator[Any]:
    """A Playwright (sync API) Chromium browser.

    Use it from a package-scoped fixture: while it is open, the sync API keeps an event loop
    running in the main thread, which breaks ``asyncio.run`` in tests that run afterwards.
    """
    require(Path(CHROMIUM).is_file(), f"Chromium at {CHROMIUM} (scripts/system/30-browser.sh)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(False, "the playwright package (test extra)")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
