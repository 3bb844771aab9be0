"""Per-session engines (0.10's ``llm_url`` in ``POST /sessions``): one proxy fronts its own engine
and the engines trainers name per session, each probed once for its capture level."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from openenv.capture import CaptureServer
from tests.server_utils import free_port, running_server

from .conftest import ENGINE_KEY, engine_requests
from .harness import run_chat
from .probe_engine import make_probe_engine


@pytest.fixture(scope="module")
def probe_url() -> Iterator[str]:
    with running_server(make_probe_engine()) as url:
        yield url


def test_sessions_name_their_engine(engine_url: str, probe_url: str) -> None:
    down_url = f"http://127.0.0.1:{free_port()}"
    with CaptureServer(llm_url=f"http://127.0.0.1:{free_port()}/v1", port=0,  # its own engine is down
                       allowed_llm_urls=(engine_url, probe_url, down_url)) as proxy:
        sessions = f"{proxy.base_url}/sessions"
        named = httpx.post(sessions, json={"llm_url": engine_url, "model": "vllm", "api_key": ENGINE_KEY}, timeout=60)
        assert named.status_code == 200, named.text
        info = named.json()
        assert info["capture_level"] == "tokens" and info["rollout_type"] == "train" and info["model"] == "vllm"
        before = len(engine_requests(engine_url))
        run_chat(f"{proxy.base_url}/v1", info["session_id"])
        sent = engine_requests(engine_url)[before:]
        assert sent and sent[-1]["authorization"] == f"Bearer {ENGINE_KEY}"  # the named engine, with its key
        doc = httpx.get(f"{sessions}/{info['session_id']}/rollout", timeout=10).json()
        assert doc["trainable"] and doc["capture_level"] == "tokens" and doc["stats"]["n_turns"] == 2

        hosted = httpx.post(sessions, json={"llm_url": probe_url, "model": "hosted-text"}, timeout=60).json()
        assert hosted["capture_level"] == "text" and hosted["rollout_type"] == "eval"
        again = httpx.post(sessions, json={"llm_url": engine_url, "model": "vllm", "api_key": ENGINE_KEY}, timeout=60)
        assert again.status_code == 200  # the same engine: its probe is reused
        health = httpx.get(f"{proxy.base_url}/health", timeout=10).json()
        assert {(u["model"], u["capture_level"]) for u in health["upstreams"]} == {("vllm", "tokens"), ("hosted-text", "text")}
        assert ENGINE_KEY not in httpx.get(f"{proxy.base_url}/health", timeout=10).text

        default = httpx.post(sessions, json={}, timeout=10).json()
        down = httpx.post(f"{proxy.base_url}/v1/chat/completions", headers={"Authorization": f"Bearer {default['session_id']}"},
                          json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}, timeout=30)
        assert down.status_code == 502  # a session without llm_url uses the server's own engine

        for body, status, words in (({"llm_url": "ftp://x"}, 400, "http(s) URL"), ({"llm_url": 5}, 400, "http(s) URL"),
                                    ({"llm_url": engine_url, "model": 3}, 400, "model must be a string"),
                                    ({"llm_url": down_url, "model": "m"}, 502, "NOT reachable"),
                                    ({"llm_url": probe_url, "model": "nonexistent"}, 502, "not served")):
            resp = httpx.post(sessions, json=body, timeout=60)
            assert resp.status_code == status and words in resp.json()["error"]["message"], (body, resp.text)


def test_named_engines_need_the_admin_key_when_one_is_set(engine_url: str) -> None:
    with CaptureServer(llm_url=engine_url, port=0, admin_key="adm-1") as proxy:  # its own engine: always allowed
        refused = httpx.post(f"{proxy.base_url}/sessions", json={"llm_url": engine_url, "model": "vllm"}, timeout=10)
        assert refused.status_code == 401
        ok = httpx.post(f"{proxy.base_url}/sessions", json={"llm_url": engine_url, "model": "vllm", "api_key": ENGINE_KEY},
                        headers={"Authorization": "Bearer adm-1"}, timeout=60)
        assert ok.status_code == 200 and ok.json()["capture_level"] == "tokens"
