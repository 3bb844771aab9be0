"""A real zoo env server shared by the /web HTTP tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.webui.page import Tab
from tests.webui.servers import serve, zoo_app


@pytest.fixture(scope="session")
def zoo_url() -> Iterator[str]:
    with serve(zoo_app()) as url:
        yield url


@pytest.fixture()
def http(zoo_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=zoo_url, timeout=30.0) as client:
        yield client


@pytest.fixture()
def open_tab(http: httpx.Client) -> Iterator[Callable[[], Tab]]:
    """Open /web tabs (each its own session); their sessions are closed afterwards."""
    tabs: list[Tab] = []

    def opener() -> Tab:
        tabs.append(Tab.open(http))
        return tabs[-1]

    yield opener
    for tab in tabs:
        tab.post("close", {})
