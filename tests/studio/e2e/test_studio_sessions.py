"""Live sessions in a real browser: a runtime page lists the env's open sessions with a capacity
gauge; a slot held by a client that vanished (an HTTP session never closed) is flagged and freed
with Close, while the studio's own Play session stays."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.studio.conftest import make_settings, running_studio
from tests.webui.servers import echo_app, serve

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def quick_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A studio that flags sessions idle for more than a second."""
    with running_studio(make_settings(tmp_path_factory.mktemp("sessions"), project="e2e-sessions",
                                      stale_session_s=1.0)) as url:
        yield url


def test_runtime_page_shows_and_frees_sessions(page: Any, quick_studio: str, shot: Any, tmp_path: Path) -> None:
    with serve(echo_app(max_concurrent_envs=4)) as env_url:
        page.goto(f"{quick_studio}/envs")
        page.fill("#attach-url", env_url)
        page.click("#attach-form button[type=submit]")
        rid = page.wait_for_selector(f'#running tr[data-status="attached"]:has-text("{env_url}")').get_attribute(
            "data-runtime")
        # a client that opens an HTTP session, steps it, and vanishes without closing it
        resp = httpx.post(env_url + "/reset", json={}, headers={"X-OpenEnv-Session": "new"}, trust_env=False)
        gone = resp.headers["X-OpenEnv-Session"]
        httpx.post(env_url + "/step", json={"action": {"message": "hi"}}, headers={"X-OpenEnv-Session": gone},
                   trust_env=False)
        play = page.context.new_page()
        play.goto(f"{quick_studio}/play/{rid}")
        play.click("#reset-button")
        play.wait_for_selector("#observation .badge.step:text('reset')")

        page.goto(f"{quick_studio}/envs/r/{rid}")
        page.wait_for_selector(f'#live-sessions tr[data-session="{gone}"]')
        assert page.inner_text("#session-count") == "2 / 4"
        assert page.locator("#session-gauge").get_attribute("value") == "2"
        row = page.locator(f'#live-sessions tr[data-session="{gone}"]')
        assert row.get_attribute("data-kind") == "http" and "1" in row.locator("td").nth(4).inner_text()
        deadline = time.monotonic() + 15
        while "client gone?" not in row.inner_text() and time.monotonic() < deadline:
            time.sleep(0.5)  # the panel polls itself every 3 s
        assert "client gone?" in row.inner_text()
        assert page.locator("#live-sessions tr.session-row").count() == 2
        shot(page, "1-sessions")
        row.locator("button.close-session").click()
        page.wait_for_selector(f'#live-sessions tr[data-session="{gone}"]', state="detached")
        assert page.inner_text("#session-count") == "1 / 4"
        ids = [s["session_id"] for s in httpx.get(env_url + "/sessions", trust_env=False).json()["sessions"]]
        assert gone not in ids and len(ids) == 1  # the studio's Play session is still open
        play.click("#step-button")
        play.wait_for_selector("#observation .badge.step:text('step 1')")
        shot(page, "2-freed")
        play.close()
        page.click("#stop-button")
