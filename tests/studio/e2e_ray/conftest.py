"""The studio's Ray launch in the browser. The cluster lives in a private network namespace
(tests/netns.py), so this package's Chromium is born inside it, where the studio and the env
servers are reachable; its own package, because one Playwright (sync API) runs at a time and the
browser of ``tests/studio/e2e`` is closed before this one opens."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser_utils import launched_chromium
from tests.studio.e2e.conftest import page, shot  # noqa: F401 - the same tab and screenshot fixtures


@pytest.fixture(scope="package")
def browser(ray_cluster: Any) -> Iterator[Any]:
    """Chromium started inside the cluster's network (the test thread goes back home at once)."""
    with contextlib.ExitStack() as stack:
        with ray_cluster.inside():
            chromium = stack.enter_context(launched_chromium())
        yield chromium
