"""Play's state machine in a real browser: buttons follow the server's phase; reload, Back and a
second tab re-attach to the open session; a session closed on the server refuses the next step
in the page and, once gone, Back offers to continue the episode from its last recorded step;
``done`` locks input until Reset; while the model plays there is one Observation panel, Step and
Reset are disabled, and State follows."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv.recording import EpisodeStore
from tests._require import require
from tests.server_utils import running_server
from tests.webui.servers import echo_app, fresh_toolbox_app, serve

pytestmark = pytest.mark.browser


def _attach(page: Any, url: str, env_url: str) -> str:
    page.goto(f"{url}/envs")
    page.fill("#attach-url", env_url)
    page.click("#attach-form button[type=submit]")
    row = page.wait_for_selector(f'#running tr[data-status="attached"]:has-text("{env_url}")')
    return row.get_attribute("data-runtime")


def _phase(page: Any, phase: str) -> None:
    page.wait_for_selector(f'#play-status[data-phase="{phase}"]', state="attached")


def _step(page: Any, message: str, n: int) -> None:
    page.fill('[id="f-a.message"]', message)
    page.click("#step-button")
    page.wait_for_selector(f"#observation .badge.step:text('step {n}')")


def _disabled(page: Any, selector: str) -> bool:
    return page.locator(selector).first.is_disabled()


def test_reload_back_two_tabs_and_a_closed_session(page: Any, studio_e2e: tuple[str, Path], shot: Any) -> None:
    url, _ = studio_e2e
    with serve(echo_app()) as env_url:
        rid = _attach(page, url, env_url)
        page.goto(f"{url}/play/{rid}")
        _phase(page, "idle")
        assert _disabled(page, "#step-button") and not _disabled(page, "#reset-button")  # no episode yet
        page.click("#reset-button")
        page.wait_for_selector("#observation .badge.step:text('reset')")
        page.wait_for_selector("#step-button:not([disabled])")
        _step(page, "one", 1)
        sid = page.get_attribute("#env-page", "data-session")
        assert f"session={sid}" in page.url and "episode=" in page.url

        page.reload()  # re-attaches: same session, same observation, and it goes on
        page.wait_for_selector("#step-form")
        assert page.get_attribute("#env-page", "data-session") == sid
        assert "one" in page.inner_text("#observation") and page.locator("#play-resume").count() == 0
        _step(page, "two", 2)

        other = page.context.new_page()  # a second tab on the same session
        other.goto(page.url)
        other.wait_for_selector("#step-form")
        assert other.get_attribute("#env-page", "data-session") == sid
        _step(other, "from the other tab", 3)
        page.wait_for_selector("#observation:has-text('from the other tab')", timeout=10_000)  # the first tab follows
        assert page.locator("#history .history-row").count() == 4
        other.close()  # its pagehide must not close the session the first tab still shows
        _step(page, "three", 4)
        shot(page, "1-reattached")

        (server_sid,) = [s["session_id"] for s in httpx.get(env_url + "/sessions", trust_env=False).json()["sessions"]]
        assert httpx.delete(f"{env_url}/sessions/{server_sid}", trust_env=False).status_code == 200
        page.fill('[id="f-a.message"]', "after the close")
        page.click("#step-button")
        alert = page.wait_for_selector('#observation [role="alert"][data-code="SESSION_CLOSED"]')
        assert "closed" in alert.inner_text()
        _phase(page, "closed")
        page.wait_for_selector("#step-button[disabled]")
        assert _disabled(page, "#reset-button") and page.locator("#observation").count() == 1
        assert "closed" in page.inner_text("#play-status")
        shot(page, "2-closed")

        page.click('a:text("Episodes")')
        page.wait_for_selector("#episode-filters")
        page.go_back()  # Back to the Play page of a closed session: offer to continue the episode
        resume = page.wait_for_selector("#play-resume")
        assert resume.get_attribute("data-step") == "4"
        assert page.get_attribute("#env-page", "data-session") != sid
        shot(page, "3-resume")
        page.click("#resume-button")
        page.wait_for_selector(".fork-of")
        _phase(page, "idle")
        assert "step 4" in page.inner_text("#observation")
        _step(page, "continued", 5)
        page.goto(f"{url}/envs")
        page.click(f'#running tr[data-runtime="{rid}"] button.stop')


def test_done_locks_input_until_reset(page: Any, studio_e2e: tuple[str, Path], shot: Any) -> None:
    require(importlib.util.find_spec("fastmcp") is not None, "fastmcp (the mcp extra)")
    url, _ = studio_e2e
    with serve(fresh_toolbox_app()) as env_url:
        rid = _attach(page, url, env_url)
        page.goto(f"{url}/play/{rid}")
        page.wait_for_selector('#mcp-panel [data-tool="finish"]')
        finish = '#mcp-panel [data-tool="finish"] button[type=submit]'
        page.wait_for_selector(f"{finish}[disabled]")  # a tool call before Reset is not offered
        page.click("#reset-button")
        page.wait_for_selector(f"{finish}:not([disabled])")
        page.click(finish)
        _phase(page, "done")
        page.wait_for_selector(f"{finish}[disabled]")
        assert _disabled(page, '#mcp-panel [data-tool="add_note"] button[type=submit]')
        assert not _disabled(page, "#reset-button")
        assert "done" in page.inner_text("#play-status")
        page.keyboard.press("Control+Enter")  # submits nothing while done
        shot(page, "1-done")
        page.click("#reset-button")
        _phase(page, "idle")
        page.wait_for_selector(f"{finish}:not([disabled])")
        page.goto(f"{url}/envs")
        page.click(f'#running tr[data-runtime="{rid}"] button.stop')


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    from tests.rollout.fake_openai import make_app

    with running_server(make_app()) as served:
        yield served + "/v1"


def test_model_play_locks_the_person_out_and_updates_in_place(page: Any, studio_e2e: tuple[str, Path],
                                                              model_url: str, shot: Any) -> None:
    url, _ = studio_e2e
    page.goto(f"{url}/models")
    page.fill("#ep-name", "slow states")
    page.fill("#ep-url", model_url)
    page.fill("#ep-model", "slow-0.4")
    page.click("#endpoint-save")
    page.wait_for_selector('li[data-endpoint="slow states"]')
    with serve(echo_app()) as env_url:
        rid = _attach(page, url, env_url)
        page.goto(f"{url}/play/{rid}")
        page.click("#reset-button")
        page.wait_for_selector("#observation .badge.step:text('reset')")
        page.select_option("#takeover-endpoint", "slow states")
        page.fill("#takeover-steps", "4")
        page.click("#takeover-go")
        _phase(page, "model playing")
        page.wait_for_selector("#step-button[disabled]")
        assert _disabled(page, "#reset-button") and not _disabled(page, "#take-back")
        counts, shown = set(), set()
        for _ in range(200):  # sample the page while the model plays
            counts.add(page.locator("#observation").count())
            shown.add(page.inner_text("#observation .panel-head .badge.step"))
            if page.get_attribute("#takeover", "data-status") != "running":
                break
            page.wait_for_timeout(150)
        assert len(shown - {"reset"}) >= 2, shown  # the panel followed the model's steps
        counts.add(page.locator("#observation").count())
        assert counts == {1}  # one panel, updated in place
        page.wait_for_selector("#observation .badge.step:text('step 4')")
        page.wait_for_selector("#state:has-text('step_count')")
        page.wait_for_function("document.querySelector('#state').innerText.includes('4')")
        _phase(page, "idle")
        page.wait_for_selector("#step-button:not([disabled])")
        shot(page, "1-model-played")
        _step(page, "mine", 5)

        page.fill("#takeover-steps", "50")  # model playing -> Take back -> idle
        page.click("#takeover-go")
        _phase(page, "model playing")
        page.wait_for_selector("#take-back:not([disabled])")
        page.wait_for_selector("#observation .badge.step:text('step 6')", timeout=30_000)
        page.click("#take-back")
        page.wait_for_selector('#takeover[data-status="taken back"]')
        _phase(page, "idle")
        page.wait_for_selector("#step-button:not([disabled])")
        assert page.locator("#observation").count() == 1
        taken = int(page.get_attribute("#takeover", "data-taken"))
        page.wait_for_selector(f"#observation .badge.step:text('step {5 + taken}')")
        _step(page, "mine again", 6 + taken)
        page.goto(f"{url}/envs")
        page.click(f'#running tr[data-runtime="{rid}"] button.stop')


def test_close_on_the_sessions_panel_closes_the_play_tab(page: Any, studio_e2e: tuple[str, Path], shot: Any) -> None:
    url, data = studio_e2e
    with serve(echo_app()) as env_url:
        rid = _attach(page, url, env_url)
        page.goto(f"{url}/play/{rid}")
        page.click("#reset-button")
        page.wait_for_selector("#step-button:not([disabled])")
        _step(page, "before", 1)
        eid = page.get_attribute("#play-status", "data-episode")

        dashboard = page.context.new_page()
        dashboard.on("dialog", lambda dialog: dialog.accept())
        dashboard.goto(f"{url}/envs/r/{rid}")
        dashboard.click("#live-sessions .close-session")
        dashboard.wait_for_selector("#live-sessions:has-text('No open sessions')")
        dashboard.close()

        page.fill('[id="f-a.message"]', "after")
        page.click("#step-button")
        page.wait_for_selector('#observation [role="alert"][data-code="SESSION_CLOSED"]')
        _phase(page, "closed")
        page.wait_for_selector("#step-button[disabled]")
        assert "before" in page.inner_text("#observation")  # the last real observation stays
        with EpisodeStore(data / "episodes.db") as store:
            assert [s.action for s in store.load_steps(eid, start=1)] == [{"message": "before"}]
        page.click("#play-reopen")  # "Open Play again" offers the episode
        page.wait_for_selector("#play-resume")
        shot(page, "1-reopened")
