"""Real browser on a generated store (a GRPO run, CLI rollouts by label, an episode with a long
model call and a failed turn): from the Runs page to a run's dashboard, a click on a step's
column to its groups, the worst group, its rollouts best first, one transcript; the episode
table's sort headers and multi-select; the transcript's failed turn and raw toggle; the token
view's token text and pages."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench.gen_store import generate
from tests.studio.conftest import make_settings, running_studio

pytestmark = pytest.mark.browser
RUN = "7" * 32
LONG = "f" * 32


@pytest.fixture(scope="module")
def runs_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("studio-runs-e2e")
    generate(data / "episodes.db", episodes=400, steps_per_episode=4, train_steps=8, rollouts=24, group_size=6,
             long_call_tokens=2500)
    with running_studio(make_settings(data, page_size=20)) as url:
        yield url


def test_dashboard_to_step_to_group_to_transcript(page: Any, runs_studio: str, shot: Any) -> None:
    page.goto(runs_studio + "/runs")
    row = page.locator(f'tr.run-row[data-run="{RUN}"]')
    row.locator(".run-count").wait_for()  # the trend cells arrive after the page
    assert row.locator(".run-count").get_attribute("data-count") == "192"
    assert row.locator("svg.sparkline").count() == 1
    row.locator("a").first.click()
    page.wait_for_url("**/runs/dashboard?run=*")
    reward = page.locator('svg[data-chart="reward"]')
    assert reward.locator("a.step-hit").count() == 8
    assert "mean" in page.locator(".chart-legend").first.inner_text()
    shot(page, "dashboard", narrow=True)
    reward.locator('a.step-hit[data-step="5"] rect').click()
    page.wait_for_url("**/runs/step?*step=5*")
    means = [float(t) for t in page.locator("tr.group-row td:nth-child(3)").all_inner_texts()]
    assert len(means) == 4 and means == sorted(means)
    page.locator("tr.group-row a").first.click()
    page.wait_for_url("**/runs/group?*")
    cards = page.locator("article.rollout")
    assert cards.count() == 6
    rewards = [float(r) for r in cards.evaluate_all("cs => cs.map(c => c.dataset.reward)")]
    assert rewards == sorted(rewards, reverse=True)
    shot(page, "group")
    cards.first.locator("a.transcript-link").click()
    page.wait_for_url("**/transcript")
    assert page.locator(".turn").count() == 4  # the reset and three steps


def test_table_sorts_by_a_header_and_selects_rows(page: Any, runs_studio: str) -> None:
    page.goto(runs_studio + f"/episodes?run={RUN}")
    page.locator('a.sort-link[data-sort="reward"]').click()
    page.wait_for_url("**sort=reward*")
    cells = page.locator("table.episodes tbody tr td:nth-child(9)").all_inner_texts()
    values = [float(c) for c in cells]
    assert values == sorted(values, reverse=True) and len(values) == 20
    assert page.locator('th[aria-sort="descending"]').inner_text().startswith("trainer reward")
    page.locator('a.sort-link[data-sort="reward"]').click()
    page.wait_for_url("**dir=asc*")
    values = [float(c) for c in page.locator("table.episodes tbody tr td:nth-child(9)").all_inner_texts()]
    assert values == sorted(values)
    page.locator("#episode-stats[data-count]").wait_for()
    assert page.locator("#episode-stats").get_attribute("data-count") == "192"
    page.locator("input.pick-all").check()
    assert page.locator("#selected-count").inner_text() == "20 selected:"
    page.locator("input.pick-all").uncheck()
    boxes = page.locator("input.pick")
    boxes.nth(0).check()
    boxes.nth(3).check()
    page.locator("#compare-selected").click()
    page.wait_for_url("**/episodes/compare?a=*&b=*")


def test_transcript_shows_the_failed_turn_and_raw(page: Any, runs_studio: str, shot: Any) -> None:
    page.goto(runs_studio + f"/episodes/{LONG}/transcript")
    failed = page.locator(".turn.failed-turn")
    assert failed.count() == 1
    assert "the reply holds no tool call" in failed.locator(".role-error").inner_text()
    assert failed.locator(".role-assistant").inner_text().endswith("I think the answer is")
    first = page.locator("#turn-1")
    assert first.locator(".chat-message .badge").all_inner_texts()[:3] == ["system", "user", "assistant"]
    raw = first.locator("details.raw")
    assert not raw.locator("pre").is_visible()
    raw.locator("summary").click()
    assert raw.locator("pre").is_visible()
    shot(page, "transcript")


def test_token_view_shows_token_text_and_pages(page: Any, runs_studio: str, shot: Any) -> None:
    page.goto(runs_studio + f"/episodes/{LONG}/tokens")
    strip = page.locator(".token-sequence .token-strip").first
    cells = strip.locator(".tok.s")
    assert cells.first.inner_text() == "the"
    assert "id " in cells.first.get_attribute("title") and "logprob" in cells.first.get_attribute("title")
    shown = cells.count()
    assert 0 < shown < 2500
    page.locator(".token-sequence a.token-page-next").first.click()
    page.locator(".token-sequence .token-strip .tok.s").first.wait_for()
    assert page.locator(".token-sequence").first.get_attribute("data-offset") != "0"
    shot(page, "tokens")
