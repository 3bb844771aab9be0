"""Real browser: a person opens an episode a capture session is still writing, follows the link
to its token view, sees the tokens shaded with their logprobs on hover, and watches the next model
call arrive without reloading."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv.capture import CaptureServer
from openenv.recording import EpisodeStore
from tests.capture.fake_engine import make_engine
from tests.capture.harness import SYSTEM, TASK, TOOL
from tests.server_utils import running_server
from tests.studio.conftest import make_settings, running_studio

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    with running_server(make_engine()) as url:
        yield url + "/v1"


def test_the_token_view_follows_a_live_capture(page: Any, engine: str, tmp_path: Path, shot: Any) -> None:
    with EpisodeStore(tmp_path / "episodes.db") as store, CaptureServer(llm_url=engine, port=0, store=store) as proxy, \
            running_studio(make_settings(tmp_path)) as studio:
        sid = httpx.post(f"{proxy.base_url}/sessions", json={}, timeout=10).json()["session_id"]
        auth = {"Authorization": f"Bearer {sid}"}
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
        first = httpx.post(f"{proxy.base_url}/v1/chat/completions", headers=auth, timeout=10,
                           json={"model": "vllm", "messages": messages, "tools": [TOOL]}).json()
        episode = httpx.get(f"{proxy.base_url}/sessions/{sid}", timeout=10).json()["episode_id"]
        page.goto(f"{studio}/episodes/{episode}?step=1")
        page.click("#token-view-link")
        page.wait_for_selector(".token-sequence")
        assert page.inner_text("#trainable-badge") == "trainable"
        assert page.locator(".model-call").count() == 1
        cell = page.locator(".token-sequence .tok.s").first
        assert cell.get_attribute("title").startswith("id ") and "logprob -0.0100" in cell.get_attribute("title")
        shot(page, "one-call")
        reply = first["choices"][0]["message"]
        messages += [reply, {"role": "tool", "tool_call_id": reply["tool_calls"][0]["id"], "content": "2"}]
        httpx.post(f"{proxy.base_url}/v1/chat/completions", headers=auth, timeout=10,
                   json={"model": "vllm", "messages": messages, "tools": [TOOL]}).raise_for_status()
        page.wait_for_function("document.querySelectorAll('.model-call').length === 2", timeout=15_000)
        assert page.locator(".token-sequence .turn-mark").count() == 2  # one conversation, two turns
        assert "2 model calls" in page.inner_text("#tokens-stats")
        page.locator(".tok-context summary").first.click()
        assert page.locator(".tok-context .tok.ctx").first.is_visible()
        shot(page, "two-calls", narrow=True)


def test_a_person_compares_two_captures_token_by_token(page: Any, engine: str, tmp_path: Path, shot: Any) -> None:
    from tests.capture.harness import run_chat

    with EpisodeStore(tmp_path / "episodes.db") as store, CaptureServer(llm_url=engine, port=0, store=store) as proxy:
        episodes = []
        for tools in (True, False):  # the second run offers no tool: its first reply differs
            sid = httpx.post(f"{proxy.base_url}/sessions", json={}, timeout=10).json()["session_id"]
            run_chat(f"{proxy.base_url}/v1", sid, tools=tools)
            episodes.append(httpx.get(f"{proxy.base_url}/sessions/{sid}", timeout=10).json()["episode_id"])
    a, b = episodes
    with running_studio(make_settings(tmp_path)) as studio:
        page.goto(f"{studio}/episodes/{a}/tokens")
        page.click("#tokens-compare")
        page.fill("#compare-b", b[:10])
        page.click("#compare-go")
        page.wait_for_selector("#compare-summary")
        page.click("#compare-tokens")
        page.wait_for_selector("#token-compare-summary")
        assert page.get_attribute("#token-compare-summary", "data-divergence") == "0"
        assert "They first differ at conversation 1, turn 1" in page.inner_text("#token-divergence-line")
        first = page.locator("#tok-call-0")
        assert first.get_attribute("open") is not None
        assert first.locator(".tok-diff").count() == 2 and first.locator(".cmp-side-a .tok").count() > 0
        shot(page, "token-compare")
        page.click("#token-compare-swap")
        page.wait_for_url(f"**/episodes/compare/tokens?a={b}&b={a}")
        assert page.locator("#tok-call-0 .tok-diff").count() == 2
