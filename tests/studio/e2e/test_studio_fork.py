"""Fork at step k in a real browser: play an episode, "Fork here" at step 1 (no divergence) goes on
in Play as a linked episode; "Fork here" at step 3 diverges at step 2 (the drift env changes its
step-2 observation after its first reset), is shown, and "Continue anyway" goes on to Play."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv.recording import EpisodeStore
from tests.studio.drift_env import drift_app
from tests.webui.servers import serve

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def drift_url() -> Iterator[str]:
    with serve(drift_app()) as url:
        yield url


def _step(page: Any, add: int, n: int) -> None:
    page.fill('[id="f-a.add"]', str(add))
    page.click("#step-button")
    page.wait_for_selector(f"#observation .badge.step:text('step {n}')")


def _fork_at(page: Any, k: int) -> None:
    page.locator("#step-slider").fill(str(k))
    page.wait_for_selector(f'#step-view[data-index="{k}"]:not(.htmx-added)')
    page.click("#fork-button")


def test_fork_here_from_the_episode_page(page: Any, studio_e2e: tuple[str, Path], drift_url: str, shot: Any) -> None:
    url, data = studio_e2e
    page.goto(f"{url}/envs")
    page.fill("#attach-url", drift_url)
    page.click("#attach-form button[type=submit]")
    rid = page.wait_for_selector(f'#running tr[data-status="attached"]:has-text("{drift_url}")').get_attribute(
        "data-runtime")
    page.goto(f"{url}/play/{rid}")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    for n, add in enumerate([1, 2, 3], 1):
        _step(page, add, n)
    page.click("#play-episode a")
    page.wait_for_selector("#step-view")
    parent = page.get_attribute("#episode", "data-episode")

    _fork_at(page, 1)  # steps 0..1 replay the same: straight on to Play
    page.wait_for_url(f"**/play/{rid}?session=*")
    assert "forked from" in page.inner_text("#play-episode")
    assert page.locator("#history .history-row").count() == 2  # the replayed reset and step 1
    _step(page, 10, 2)
    shot(page, "1-fork-play")
    page.click("#play-episode a.mono >> nth=0")
    page.wait_for_selector("#fork-parent")
    assert page.inner_text("#fork-parent").endswith("at step 1")
    assert page.inner_text("#total-return") == "11"
    page.click("#fork-parent a")
    page.wait_for_selector("#fork-children")
    assert "at step 1" in page.inner_text("#fork-children")

    _fork_at(page, 3)  # the env drifts at step 2 now: the replay stops there
    report = page.wait_for_selector("#fork-report")
    assert report.get_attribute("data-diverged-at") == "2"
    assert "drift" in report.inner_text() and "diverged at step 2" in report.inner_text()
    shot(page, "2-diverged", narrow=True)
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    page.click("#fork-continue")
    page.wait_for_url(f"**/play/{rid}?session=*")
    assert "forked from" in page.inner_text("#play-episode") and "3 steps" in page.inner_text("#play-episode")
    _step(page, 5, 4)
    shot(page, "3-continued")

    store = EpisodeStore(data / "episodes.db")
    try:
        forks = store.list_forks(parent)
        assert [(f.fork_step, f.step_count) for f in forks] == [(1, 2), (3, 4)]
        assert [s.action for s in store.load_steps(forks[1].id)[1:]] == [{"add": a} for a in (1, 2, 3, 5)]
    finally:
        store.close()
