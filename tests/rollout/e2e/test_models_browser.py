"""Run a model and take over in Play, in a real browser (Chromium), against the loopback model
server: save an endpoint (typed key), start a run, watch episodes appear and the results table,
compare two runs per seed, open a model step's prompt and completion; in Play let the model play
three steps, take back, and see who acted on the episode's timeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openenv.recording import EpisodeStore
from tests.studio.e2e.test_studio_browser import _launch, _step

pytestmark = pytest.mark.browser


def _save_endpoint(page: Any, url: str, name: str, model_url: str, model: str, key: str | None = None) -> None:
    page.goto(f"{url}/models")
    page.fill("#ep-name", name)
    page.fill("#ep-url", model_url)
    page.fill("#ep-model", model)
    if key:
        page.fill("#ep-key", key)
    page.click("#endpoint-save")
    page.wait_for_selector(f'li[data-endpoint="{name}"]')


def _run(page: Any, url: str, endpoint: str, label: str, episodes: int) -> str:
    page.goto(f"{url}/models")
    page.select_option("#run-endpoint", endpoint)
    page.fill("#run-episodes", str(episodes))
    page.fill("#run-concurrency", "2")
    page.fill("#run-max_steps", "3")
    page.fill("#run-label", label)
    page.click("#run-start")
    page.wait_for_selector("#model-progress")
    return page.url.rsplit("/", 1)[-1]


def test_run_a_model_watch_it_and_compare(page: Any, studio_e2e: tuple[str, Path], model_url: str, shot: Any) -> None:
    url, data = studio_e2e
    _launch(page, url, "echo", "process")
    _save_endpoint(page, url, "fake", model_url, "echo", key="sk-browser-secret")
    _save_endpoint(page, url, "slowish", model_url, "slow-0.2")
    assert "typed (kept in memory)" in page.inner_text('li[data-endpoint="fake"]')

    slow = _run(page, url, "slowish", "slow-run", 4)
    page.wait_for_selector('#model-progress tr[data-status="running"]')  # episodes appear as they start
    shot(page, "1-running")
    page.wait_for_selector('#model-progress[data-status="finished"]', timeout=60_000)
    assert page.locator('#model-progress tr[data-status="finished"]').count() == 4
    assert "pass@1" in page.inner_text("#run-results")

    fast = _run(page, url, "fake", "fast-run", 4)
    page.wait_for_selector('#model-progress[data-status="finished"]', timeout=60_000)
    shot(page, "2-finished", narrow=True)

    page.goto(f"{url}/models")
    page.select_option("#compare-a", slow)
    page.select_option("#compare-b", fast)
    page.click("#compare-go")
    page.wait_for_selector("#compare-table")
    assert page.locator("#compare-table tr[data-seed]").count() == 4
    shot(page, "3-compare")

    page.goto(f"{url}/models/runs/{fast}")
    page.click('#model-progress tr[data-index="0"] a')
    page.wait_for_selector("#step-view")
    page.click("#next-step")
    page.wait_for_selector("#agent-turn")
    assert page.inner_text("#agent-completion").strip() == '{"message":"m1"}'
    page.click(".agent-prompt summary")
    assert "Action schema" in page.inner_text(".agent-prompt")
    assert page.inner_text("#step-actor") == "model"
    shot(page, "4-model-step")
    assert b"sk-browser-secret" not in b"".join(f.read_bytes() for f in data.rglob("*") if f.is_file())


def test_take_over_in_play_and_take_back(page: Any, studio_e2e: tuple[str, Path], model_url: str, shot: Any) -> None:
    url, data = studio_e2e
    rid = _launch(page, url, "echo", "process")
    _save_endpoint(page, url, "taker", model_url, "echo")
    _save_endpoint(page, url, "slow taker", model_url, "slow-0.3")
    page.goto(f"{url}/play/{rid}")
    page.wait_for_selector("#step-form")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    _step(page, "by hand", 1)

    page.select_option("#takeover-endpoint", "taker")
    page.fill("#takeover-steps", "3")
    page.click("#takeover-go")
    page.wait_for_selector('#takeover[data-status="finished"]', timeout=30_000)
    page.wait_for_selector("#observation .badge.step:text('step 4')")  # refreshed out of band
    assert "m3" in page.inner_text("#observation")
    assert page.locator("#history .badge.actor-model").count() == 3  # the Play history marks the model's steps
    shot(page, "1-model-played")

    page.select_option("#takeover-endpoint", "slow taker")
    page.fill("#takeover-steps", "100")
    page.click("#takeover-go")
    page.wait_for_selector('#takeover[data-status="running"]')
    page.wait_for_selector("#observation .badge.step:text('step 5')", timeout=30_000)
    page.click("#take-back")
    page.wait_for_selector('#takeover[data-status="taken back"]')
    taken = int(page.get_attribute("#takeover", "data-taken"))
    assert 1 <= taken < 100
    n = 4 + taken + 1
    page.wait_for_timeout(300)
    page.fill('[id="f-a.message"]', "mine again")
    page.click("#step-button")
    page.wait_for_selector(f"#observation .badge.step:text('step {n}')")
    shot(page, "2-taken-back")

    page.click("#play-episode a")
    page.wait_for_selector("#step-view")
    actors = page.locator(".timeline-window .badge.actor").all_inner_texts()
    assert actors[:5] == ["h", "m", "m", "m", "m"] and actors[-1] == "h"
    eid = page.url.split("/episodes/")[1].split("?")[0]
    with EpisodeStore(data / "episodes.db") as store:
        steps = store.load_steps(eid)
    assert [s.actor for s in steps][:5] == [None, "human", "model", "model", "model"]
    assert steps[-1].actor == "human" and steps[-1].action == {"message": "mine again"}
    shot(page, "3-timeline")


def test_fork_at_a_model_call_and_the_model_plays_on(page: Any, studio_e2e: tuple[str, Path], model_url: str,
                                                     shot: Any) -> None:
    """On a model's step, *Fork with model*: the env is replayed to the step before the call, and the
    chosen endpoint's model makes the call anew and plays on in Play; the fork is linked to its parent."""
    url, data = studio_e2e
    _launch(page, url, "echo", "process")
    _save_endpoint(page, url, "forker", model_url, "echo")
    run = _run(page, url, "forker", "fork-source", 1)
    page.wait_for_selector('#model-progress[data-status="finished"]', timeout=60_000)
    page.goto(f"{url}/models/runs/{run}")
    page.click('#model-progress tr[data-index="0"] a')
    page.wait_for_selector("#step-view")
    parent = page.url.split("/episodes/")[1].split("?")[0]
    for n in (1, 2):
        page.click("#next-step")
        page.wait_for_selector(f"#step-view .badge.step:text('step {n}')")
    page.wait_for_selector("#agent-turn #fork-model-form")
    assert "replay to step 1" in page.inner_text("#fork-model-form")
    page.select_option("#fork-model-endpoint", "forker")
    page.fill("#fork-model-steps", "2")
    shot(page, "1-fork-at-call")
    page.click("#fork-model-button")
    page.wait_for_url("**/play/**")
    page.wait_for_selector('#takeover[data-status="finished"]', timeout=30_000)
    page.wait_for_selector("#observation .badge.step:text('step 3')")
    shot(page, "2-model-played-on")
    with EpisodeStore(data / "episodes.db") as store:
        (fork,) = store.list_forks(parent)
        steps = store.load_steps(fork.id)
    assert fork.fork_step == 1
    assert [s.actor for s in steps][2:] == ["model", "model"]  # the call forked at is made anew, then one more
    assert steps[2].agent and steps[2].agent.get("completion")
