"""A capture session in the studio: the episode page links the token view, which shows each
sequence's tokens (sampled ones shaded by probability, untrainable ones hatched), the findings in
words and every call; it follows a session that is still running."""

from __future__ import annotations

from pathlib import Path

import httpx

from openenv.capture import CaptureServer
from openenv.recording import EpisodeStore
from tests.studio.conftest import StudioClient, make_settings, running_studio
from tests.studio.html import page

from .harness import run_chat


def _captured(engine_url: str, data: Path, model: str = "vllm") -> str:
    """One capture session recorded into the studio's store; the episode id."""
    with EpisodeStore(data / "episodes.db") as store, CaptureServer(llm_url=engine_url, port=0, store=store) as proxy:
        sid = httpx.post(f"{proxy.base_url}/sessions", json={}, timeout=10).json()["session_id"]
        run_chat(f"{proxy.base_url}/v1", sid, model=model)
        episode = httpx.get(f"{proxy.base_url}/sessions/{sid}", timeout=10).json()["episode_id"]
        httpx.delete(f"{proxy.base_url}/sessions/{sid}", timeout=10)
    return episode


def test_the_token_view_shows_a_captured_episode(engine_url: str, tmp_path: Path) -> None:
    good = _captured(engine_url, tmp_path)
    bad = _captured(engine_url, tmp_path, model="misaligned")
    with running_studio(make_settings(tmp_path)) as url:
        sc = StudioClient(httpx.Client(base_url=url, timeout=30, trust_env=False))
        step = sc.page(f"/episodes/{good}", params={"step": "2"})
        link = step.by_id("token-view-link")
        assert link is not None and link.attrs["href"].endswith(f"/episodes/{good}/tokens")
        view = sc.page(f"/episodes/{good}/tokens")
        assert view.by_id("trainable-badge").text() == "trainable"
        (seq,) = view.with_class("token-sequence")
        assert seq.attrs["data-role"] == "agent"
        sampled = seq.with_class("s")
        assert sampled and all("logprob" in c.attrs["title"] for c in sampled)
        assert not seq.with_class("masked") and len(seq.with_class("turn-mark")) == 2
        assert len(view.with_class("model-call")) == 2
        doc = sc.http.get(f"/episodes/{good}/training.jsonl")
        assert doc.status_code == 200 and '"trainable":true' in doc.text
        broken = sc.page(f"/episodes/{bad}/tokens")
        assert broken.by_id("trainable-badge").text() == "not trainable"
        assert "logprob_misalign" in broken.by_id("rollout-findings").text()
        assert broken.with_class("masked")  # sampled, shown, but not trainable
        empty = sc.page("/episodes", params={})  # an episode of no capture: a clear message, not an error
        assert empty is not None
        sc.http.close()


def test_an_episode_without_capture_says_so(engine_url: str, tmp_path: Path) -> None:
    with EpisodeStore(tmp_path / "episodes.db") as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={"x": 1})
        store.finish_episode(eid, "closed")
    with running_studio(make_settings(tmp_path)) as url:
        resp = httpx.get(f"{url}/episodes/{eid}/tokens", timeout=30, trust_env=False)
        assert resp.status_code == 200 and "no captured model calls" in page(resp.text).by_id("tokens-empty").text()
        refused = httpx.get(f"{url}/episodes/{eid}/training.jsonl", timeout=30, trust_env=False)
        assert refused.status_code == 422 and "no captured model calls" in refused.text
        assert httpx.get(f"{url}/episodes/nope/tokens", timeout=30, trust_env=False).status_code == 404
