"""The studio in a real browser: launch echo (process provider), step it three times, find the
episode, replay it, re-run it, export it, stop the env; a scripted episode showing up live."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from openenv.core import GenericEnvClient
from openenv.recording import EpisodeStore, record

pytestmark = pytest.mark.browser


def _launch(page: Any, url: str, target: str, provider: str) -> str:
    """Open the launch form of ``target``, start it with ``provider``; return the runtime id."""
    page.goto(f"{url}/envs")
    page.click(f'tr[data-target="{target}"] .launch-open')
    page.wait_for_selector("#launch-form")
    if page.locator("#launch-provider").input_value() != provider:
        page.select_option("#launch-provider", provider)
        page.wait_for_selector(f'#launch-provider option[value="{provider}"][selected]', state="attached")
    page.click("#launch-button")
    status = page.wait_for_selector('.launch-status[data-status="running"], .launch-status[data-status="failed"]',
                                    timeout=120_000)
    assert status.get_attribute("data-status") == "running", status.inner_text()
    return status.get_attribute("data-runtime")


def _settled(page: Any, selector: str) -> None:
    """Wait for a swapped-in element and for htmx to have settled it (its triggers are live then)."""
    page.wait_for_selector(f"{selector}:not(.htmx-added)")


def _step(page: Any, message: str, n: int) -> None:
    page.fill('[id="f-a.message"]', message)
    page.click("#step-button")
    page.wait_for_selector(f"#observation .badge.step:text('step {n}')")


def test_launch_play_find_replay_rerun_export_stop(page: Any, studio_e2e: tuple[str, Path], shot: Any) -> None:
    url, _ = studio_e2e
    rid = _launch(page, url, "echo", "process")
    page.wait_for_selector(f'#running tr[data-runtime="{rid}"] .health .badge.done')
    shot(page, "1-launched", narrow=True)

    page.click(f'#running tr[data-runtime="{rid}"] a:text("Play")')
    page.wait_for_selector("#step-form")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    for n, message in enumerate(["hello", "studio", "world!"], 1):
        _step(page, message, n)
    assert "world!" in page.inner_text("#observation")
    assert page.locator("#history .history-row").count() == 4
    assert "3 steps" in page.inner_text("#play-episode")
    shot(page, "2-played", narrow=True)

    page.click('a:text("Episodes")')
    page.select_option('#episode-filters select[name="source"]', "human")
    page.wait_for_url("**/episodes?*source=human*")
    row = page.wait_for_selector("tr.episode-row")
    assert "echo" in row.inner_text() and row.query_selector("td.steps").inner_text() == "3"
    shot(page, "3-episodes", narrow=True)
    row.query_selector("a").click()
    page.wait_for_selector("#step-view")
    assert page.inner_text("#total-return").startswith("1.7")
    assert page.locator("#live svg polyline").count() == 1
    # the chart draws what was played (journal-recorded steps): 4 points, 3 bars, return 1.7
    chart = page.locator("#live svg.chart")
    assert chart.get_attribute("data-points") == "4"
    assert page.locator("#live svg.chart rect.bar").count() == 3
    assert chart.locator(":scope > title").text_content() == "return 1.7 after 3 steps"
    timeline = [float(t) for t in page.locator("#step-view .timeline-window tbody tr td:nth-child(3)").all_inner_texts()[1:]]
    assert timeline == pytest.approx([0.5, 0.6, 0.6])

    page.keyboard.press("ArrowRight")
    _settled(page, '#step-view[data-index="1"]')
    assert "hello" in page.inner_text("#step-view .step-action")
    assert "echoed_message" in page.inner_text("#step-view .step-diff")
    page.click("#next-step")
    _settled(page, '#step-view[data-index="2"]')
    page.locator("#step-slider").fill("3")
    _settled(page, '#step-view[data-index="3"]')
    assert "world!" in page.inner_text("#step-view .step-observation")
    assert page.url.endswith("step=3")
    shot(page, "4-episode", narrow=True)

    page.select_option("#rerun-runtime", rid)
    page.click("#rerun-button")
    report = page.wait_for_selector(".rerun-report")
    assert report.get_attribute("data-deterministic") == "yes", report.inner_text()

    with page.expect_download() as download:
        page.click("#export-jsonl")
    exported = json.loads(Path(download.value.path()).read_text().splitlines()[0])
    assert [s["action"] for s in exported["steps"][1:]] == [{"message": m} for m in ("hello", "studio", "world!")]
    assert [s["reward"] for s in exported["steps"][1:]] == pytest.approx(timeline)
    assert exported["total_reward"] == pytest.approx(sum(timeline))
    shot(page, "5-rerun")

    page.click('a:text("Environments")')
    page.click(f'#running tr[data-runtime="{rid}"] button.stop')
    page.wait_for_selector(f'#running tr[data-runtime="{rid}"]', state="detached")
    shot(page, "6-stopped")


def test_failed_launch_shows_reason(page: Any, studio_e2e: tuple[str, Path], shot: Any, tmp_path: Path) -> None:
    url, _ = studio_e2e
    env_dir = tmp_path / "needs_key"
    env_dir.mkdir()
    (env_dir / "app.py").write_text('raise SystemExit("NEEDS_KEY is not set: export it and retry")\n')
    page.goto(f"{url}/envs")
    page.fill("#catalogue-target", str(env_dir))
    page.click('#catalogue button:text("Add")')
    page.wait_for_selector(f'tr[data-target="{env_dir}"]')
    page.click(f'tr[data-target="{env_dir}"] .launch-open')
    page.click("#launch-button")
    status = page.wait_for_selector('.launch-status[data-status="failed"]', timeout=120_000)
    assert "NEEDS_KEY is not set" in status.inner_text()
    shot(page, "failed")


def test_scripted_episode_shows_up_live(page: Any, studio_e2e: tuple[str, Path], echo_url: str, shot: Any) -> None:
    url, data = studio_e2e
    go = [threading.Event() for _ in range(3)]
    errors: list[BaseException] = []

    def script() -> None:
        store = EpisodeStore(data / "episodes.db")
        try:
            env = record(GenericEnvClient(base_url=echo_url).sync(), store=store, label="script-live")
            with env:
                env.reset(seed=3)
                for n, event in enumerate(go[:2], 1):
                    assert event.wait(60)
                    env.step({"message": "x" * n})
                assert go[2].wait(60)
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)
        finally:
            store.close()

    worker = threading.Thread(target=script, daemon=True)
    worker.start()
    try:
        page.goto(f"{url}/episodes?label=script-live")
        row = page.wait_for_selector('tr.episode-row[data-finished="no"]')
        assert "live" in row.inner_text()
        row.query_selector("a").click()
        page.wait_for_selector('#live[data-finished="no"]')
        assert "recording" in page.inner_text("#live")
        go[0].set()
        page.wait_for_selector('#live[data-steps="1"]')
        go[1].set()
        page.wait_for_selector('#live[data-steps="2"]')
        assert page.inner_text("#total-return").startswith("0.3")
        page.wait_for_selector("#step-total:text-is('2')")
        page.click("#next-step")  # the page was loaded at step 0 of 0; new steps are reachable live
        _settled(page, '#step-view[data-index="1"]')
        assert "x" in page.inner_text("#step-view .step-action")
        shot(page, "live", narrow=True)
        go[2].set()
        page.wait_for_selector('#live[data-finished="yes"]')
        assert "hx-trigger" not in page.eval_on_selector("#live", "e => e.outerHTML")
    finally:
        for event in go:
            event.set()
        worker.join(30)
    assert errors == []
