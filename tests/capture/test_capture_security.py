"""The capture proxy is no relay for web pages: per-session engines only from the allow-list,
other origins' pages and rebound Host names refused, ``/v1/models`` behind the admin key."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from openenv.capture import CaptureServer
from openenv.capture.upstreams import engine_key
from tests.server_utils import running_server

from .conftest import ENGINE_KEY
from .fake_engine import make_engine


@pytest.fixture(scope="module")
def victim_url() -> Iterator[str]:
    """Another service on the machine a hostile page would like the proxy to call."""
    with running_server(make_engine()) as url:
        yield url


def _hits(url: str) -> int:
    return len(httpx.get(f"{url}/_requests", timeout=10).json())


def test_sessions_cannot_name_an_engine_the_operator_did_not_allow(engine_url: str, victim_url: str) -> None:
    with CaptureServer(llm_url=engine_url, port=0, api_key=ENGINE_KEY) as proxy:
        before = _hits(victim_url)
        for url in (victim_url, f"{victim_url}/v1", victim_url.replace("127.0.0.1", "localhost")):
            resp = httpx.post(f"{proxy.base_url}/sessions", json={"llm_url": url, "model": "m"}, timeout=30)
            assert resp.status_code == 403, resp.text
            assert "--allow-llm-url" in resp.json()["error"]["message"]
        assert _hits(victim_url) == before  # never called
        assert proxy.registry.list_ids() == []
        own = httpx.post(f"{proxy.base_url}/sessions", json={"llm_url": engine_url + "/", "model": "vllm"}, timeout=60)
        assert own.status_code == 200, own.text  # the --llm-url engine itself is always allowed


def test_cross_site_text_plain_post_to_sessions_is_refused(engine_url: str, victim_url: str) -> None:
    with CaptureServer(llm_url=engine_url, port=0, allowed_llm_urls=(victim_url,)) as proxy:
        body = json.dumps({"llm_url": victim_url, "model": "m"})
        before = _hits(victim_url)
        for headers in ({"Origin": "http://127.0.0.1:9"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
            resp = httpx.post(f"{proxy.base_url}/sessions", content=body,
                              headers={"Content-Type": "text/plain", **headers}, timeout=30)
            assert resp.status_code == 403 and resp.json()["code"] == "ORIGIN_NOT_ALLOWED", headers
        assert _hits(victim_url) == before and proxy.registry.list_ids() == []
        port = proxy.base_url.rsplit(":", 1)[1]
        sid = httpx.post(f"{proxy.base_url}/sessions", json={}, timeout=10).json()["session_id"]
        rebound = httpx.get(f"{proxy.base_url}/sessions", headers={"Host": f"evil.example:{port}"}, timeout=10)
        assert rebound.status_code == 403 and sid not in rebound.text


def test_models_need_the_admin_key_when_one_is_set(engine_url: str) -> None:
    with CaptureServer(llm_url=engine_url, port=0, admin_key="adm-1") as proxy:
        assert httpx.get(f"{proxy.base_url}/v1/models", timeout=10).status_code == 401
        assert httpx.get(f"{proxy.base_url}/v1/models", headers={"Authorization": "Bearer wrong"}, timeout=10).status_code == 401
        assert httpx.get(f"{proxy.base_url}/v1/models", headers={"Authorization": "Bearer adm-1"}, timeout=10).status_code == 200
        sid = httpx.post(f"{proxy.base_url}/sessions", json={}, headers={"Authorization": "Bearer adm-1"},
                         timeout=10).json()["session_id"]
        harness = httpx.get(f"{proxy.base_url}/v1/models", headers={"Authorization": f"Bearer {sid}"}, timeout=10)
        assert harness.status_code == 200  # a harness lists models with its session id as the key


def test_engine_keys_compare_base_urls() -> None:
    assert engine_key("http://H:8000/v1/") == engine_key("http://h:8000") == "http://h:8000"
    assert engine_key("https://e.example:443/v1") == "https://e.example"
    assert engine_key("http://e/api/v1") != engine_key("http://e")
