"""The same harness traffic through the published 0.10's capture proxy (its own venv and process)
and through ours, against the same loopback engine: the same rollout documents.

Compared exactly: every structural field (stats, sequences: ids, masks, logprobs, roles, turn
lengths; turns: counts, finish reasons, sampling params, messages), with node ids mapped to their
arrival order; validation findings by level and code (``[WARN] multiple_roots``) — the detail
sentences are each project's own words.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv.capture import CaptureServer
from tests.peer010 import _clean_env, peer010_python
from tests.server_utils import free_port, wait_healthy

from .conftest import ENGINE_KEY
from .harness import SYSTEM, TASK, TOOL, run_anthropic, run_chat, run_google, run_responses

PEER_SCRIPT = Path(__file__).with_name("peer_capture.py")


@pytest.fixture(scope="module")
def published_proxy(engine_url: str) -> Iterator[str]:
    python = peer010_python()
    port = free_port()
    proc = subprocess.Popen([python, "-P", str(PEER_SCRIPT), engine_url, str(port), ENGINE_KEY], cwd="/",
                            env=_clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, timeout_s=60)
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


@pytest.fixture(scope="module")
def our_proxy(engine_url: str) -> Iterator[str]:
    with CaptureServer(llm_url=engine_url, port=0, api_key=ENGINE_KEY) as server:
        yield server.base_url


def _chat_loop(url: str, sid: str, **kw: Any) -> None:
    run_chat(f"{url}/v1", sid, **kw)


def _retry_and_title(url: str, sid: str) -> None:
    auth = {"Authorization": f"Bearer {sid}"}
    start = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    httpx.post(f"{url}/v1/chat/completions", json={"model": "vllm", "messages": start, "tools": [TOOL]}, headers=auth,
               timeout=10).raise_for_status()
    httpx.post(f"{url}/v1/chat/completions", json={"model": "vllm", "messages": [{"role": "user", "content": "Title?"}]},
               headers=auth, timeout=10).raise_for_status()
    run_chat(f"{url}/v1", sid)


def _rewritten_history(url: str, sid: str) -> None:
    """A harness that rewrites its system prompt mid-run: a second root (0.10: multiple_roots)."""
    run_chat(f"{url}/v1", sid, max_calls=1)
    auth = {"Authorization": f"Bearer {sid}"}
    messages = [{"role": "system", "content": SYSTEM + " (v2)"}, {"role": "user", "content": TASK}]
    httpx.post(f"{url}/v1/chat/completions", json={"model": "vllm", "messages": messages, "tools": [TOOL],
                                                   "top_p": 0.9, "temperature": 0.7},
               headers=auth, timeout=10).raise_for_status()


SCENARIOS = {
    "tool_loop": lambda url, sid: _chat_loop(url, sid),
    "tool_loop_streamed": lambda url, sid: _chat_loop(url, sid, stream=True),
    "no_tools": lambda url, sid: _chat_loop(url, sid, tools=False),
    "sglang": lambda url, sid: _chat_loop(url, sid, model="sglang"),
    "misaligned": lambda url, sid: _chat_loop(url, sid, model="misaligned"),
    "stale_endpoint": lambda url, sid: _chat_loop(url, sid, model="stale"),
    "retry_and_title": _retry_and_title,
    "rewritten_history": _rewritten_history,
    "anthropic": lambda url, sid: run_anthropic(url, sid),
    "responses": lambda url, sid: run_responses(f"{url}/v1", sid),
    "responses_streamed": lambda url, sid: run_responses(f"{url}/v1", sid, stream=True),
    "google": lambda url, sid: run_google(url, sid),
    "google_streamed": lambda url, sid: run_google(url, sid, stream=True),
}


def _document(url: str, scenario: str) -> dict[str, Any]:
    sid = httpx.post(f"{url}/sessions", json={"metadata": {"scenario": scenario}}, timeout=10).json()["session_id"]
    SCENARIOS[scenario](url, sid)
    resp = httpx.get(f"{url}/sessions/{sid}/rollout", params={"include_discarded": "true", "include_messages": "true"},
                     timeout=10)
    resp.raise_for_status()
    return resp.json()


_CODE = re.compile(r"^(\[?[A-Z]+\]?) ?([a-z_]+)")


def _normalised(doc: dict[str, Any]) -> dict[str, Any]:
    order = {t["node_id"]: t["index"] for t in doc["turns"]}
    turns = [{**t, "node_id": order[t["node_id"]], "root_id": order[t["root_id"]]} for t in doc["turns"]]
    for t in turns:
        for m in t.get("request_messages") or []:
            for call in m.get("tool_calls") or []:
                call.pop("id", None)
            m.pop("tool_call_id", None)
        reply = t.get("response_message") or {}
        for call in reply.get("tool_calls") or []:
            call.pop("id", None)
    sequences = [{**s, "root_id": order[s["root_id"]], "node_ids": [order[i] for i in s["node_ids"]],
                  "validation": [" ".join(_CODE.match(f).groups()) for f in s["validation"]]} for s in doc["sequences"]]
    return {**doc, "session_id": None, "turns": turns, "sequences": sorted(sequences, key=lambda s: s["node_ids"]),
            "validation": sorted(" ".join(_CODE.match(f.replace("WARN sampling", "[WARN] sampling")).groups())
                                 for f in doc["validation"])}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_same_traffic_gives_the_same_document(published_proxy: str, our_proxy: str, scenario: str) -> None:
    theirs, ours = _normalised(_document(published_proxy, scenario)), _normalised(_document(our_proxy, scenario))
    for key in sorted(set(theirs) | set(ours)):
        assert ours.get(key) == theirs.get(key), f"{scenario}: {key} differs"
