"""Real browser over a run TRL wrote: TRL's OpenEnv quick start (GRPO, 2 steps x 4 rollouts on CPU,
a tiny local model taught to call ``echo``) recorded by ``record_trl`` against our echo server,
once per module. From the Runs page to its dashboard (rewards and tokens per step), a click on a
step to its group, the rollouts, one transcript, and its token view with the model's own
tokenizer named in the view."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv.recording import EpisodeFilter, EpisodeStore
from tests.studio.conftest import make_settings, running_studio
from tests.training import require_trl

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def trl_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(data dir holding episodes.db, the model directory)`` after the recorded quick start."""
    require_trl()
    from tests.peer010 import serving_ours
    from tests.training.conftest import ECHO_PROMPT, HERE, echo, run_training
    from tests.training.tiny_model import Lesson, build_tiny, echo_tool_call, tool_schema

    root = tmp_path_factory.mktemp("trl-run-e2e")
    lesson = Lesson(prompts=[ECHO_PROMPT], completions=[echo_tool_call("Hello World!"), echo_tool_call("hi")],
                    tools=[tool_schema(echo)])
    model = build_tiny(root / "tiny", teach=[lesson])
    out = root / "out"
    with serving_ours(HERE / "echo_server.py") as url:
        run_training(HERE / "scripts" / "echo_quickstart_recorded.py", str(model), url, out=out)
    data = root / "studio"
    data.mkdir()
    (out / "runs.db").rename(data / "episodes.db")
    return data, model


@pytest.fixture(scope="module")
def trl_studio(trl_run: tuple[Path, Path]) -> Iterator[str]:
    with running_studio(make_settings(trl_run[0], project="e2e-trl")) as url:
        yield url


def test_from_the_runs_page_to_a_rollouts_transcript_and_tokens(page: Any, trl_studio: str,
                                                                trl_run: tuple[Path, Path], shot: Any) -> None:  # fmt: skip
    with EpisodeStore(trl_run[0] / "episodes.db") as store:
        (run,), _ = store.list_training_runs()
        episodes = list(store.iter_episodes(EpisodeFilter(training_run_id=run.id)))
    assert all(e.prompt_tokens and e.completion_tokens for e in episodes)  # record_trl's turns counted them
    step1 = [e for e in episodes if e.train_step == 1]
    page.goto(trl_studio + "/runs")
    row = page.locator(f'tr.run-row[data-run="{run.id}"]')
    row.locator(".run-count").wait_for()
    assert row.locator(".run-count").get_attribute("data-count") == "8"
    row.locator("a").first.click()
    page.wait_for_url("**/runs/dashboard?run=*")
    assert page.inner_text("#run-status") == "finished"
    assert page.locator('svg[data-chart="reward"] a.step-hit').count() == 2
    assert page.locator('svg[data-chart="tokens"] polyline').count() == 2  # completion and prompt means
    total = sum(e.prompt_tokens + e.completion_tokens for e in step1)
    assert page.locator('tr.step-row[data-step="1"] td.tok-total').inner_text() == str(total)
    shot(page, "dashboard")
    page.locator('svg[data-chart="reward"] a.step-hit[data-step="1"] rect').click()
    page.wait_for_url("**/runs/step?*step=1*")
    assert page.locator("tr.group-row").count() == 1  # one prompt, its 4 generations
    page.locator("tr.group-row a").first.click()
    page.wait_for_url("**/runs/group?*")
    cards = page.locator("article.rollout")
    assert cards.count() == 4
    rewards = [float(r) for r in cards.evaluate_all("cs => cs.map(c => c.dataset.reward)")]
    assert rewards == sorted(rewards, reverse=True)
    assert "prompt" in cards.first.locator("dd.tokens").inner_text()
    best = cards.first.get_attribute("data-episode")
    cards.first.locator("a.transcript-link").click()
    page.wait_for_url(f"**/episodes/{best}/transcript")
    assert page.locator(".turn").count() >= 2  # the reset, and the model's turn with its tool call
    assert page.locator(".chat-message.role-assistant").count() >= 1
    shot(page, "transcript")
    page.goto(trl_studio + f"/episodes/{best}/tokens")
    strip = page.locator(".token-sequence .token-strip").first
    assert page.inner_text("#trainable-badge") == "trainable"  # TRL's own loss mask, not sampling logprobs, decides
    assert strip.locator(".tok.s").first.inner_text().isdigit()  # TRL keeps ids only: no token text yet
    page.fill("#tokenizer-path", str(trl_run[1]))
    page.click("#tokenizer-apply")
    page.locator("#tokenizer-used").wait_for()
    texts = page.locator(".token-sequence .token-strip .tok.s").all_inner_texts()
    assert texts and not all(t.isdigit() for t in texts)
    assert "echo" in "".join(texts)  # the tool call the model was taught, in its own tokens
    shot(page, "tokens")
    page.fill("#tokenizer-path", str(trl_run[0] / "nowhere"))
    page.click("#tokenizer-apply")
    page.locator("#tokenizer-error").wait_for()
    assert "there is no file or directory" in page.inner_text("#tokenizer-error")
    assert page.locator(".token-sequence .token-strip .tok.s").first.inner_text().isdigit()
