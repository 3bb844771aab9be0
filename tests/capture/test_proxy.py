"""The capture proxy as a harness and a trainer use it: a session minted, a tool-using agent loop
in each dialect and mode, the engine asked for its ids, the rollout document back."""

from __future__ import annotations

import httpx
import pytest

from openenv.capture import CaptureServer

from .conftest import ENGINE_KEY, engine_requests
from .fake_engine import render_body, render_prompt
from .harness import run_anthropic, run_chat, run_google, run_responses


def _session(proxy: CaptureServer, **payload: object) -> str:
    resp = httpx.post(f"{proxy.base_url}/sessions", json=payload, timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()["session_id"]


def _doc(proxy: CaptureServer, sid: str, **params: object) -> dict:
    resp = httpx.get(f"{proxy.base_url}/sessions/{sid}/rollout", params=params, timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_using_chat_rollout_is_one_trainable_sequence_of_the_engines_own_ids(
        proxy: CaptureServer, engine_url: str, stream: bool) -> None:
    sid = _session(proxy, metadata={"task": "add"})
    assert sid.startswith("s") and len(sid) == 25
    messages = run_chat(f"{proxy.base_url}/v1", sid, stream=stream)
    assert messages[-1]["content"] == "done: 2"  # the harness got real answers, streamed or not
    doc = _doc(proxy, sid)
    assert doc["trainable"] is True and doc["rollout_type"] == "train" and doc["metadata"] == {"task": "add", "api_type": "openai_chat"}
    assert doc["stats"]["n_turns"] == 2 and doc["stats"]["n_roots"] == 1
    (seq,) = doc["sequences"]
    expected = render_prompt(messages[:-1]) + render_body(messages[-1])  # what the engine saw and sampled
    assert seq["input_ids"] == expected and seq["role"] == "agent" and seq["trainable"]
    first = render_body(messages[2])
    assert seq["turn_lengths"] == [len(first), len(render_body(messages[-1]))]
    assert seq["prompt_len"] == len(render_prompt(messages[:2]))
    assert sum(seq["loss_mask"]) == seq["n_trainable"] == len(first) + len(render_body(messages[-1]))
    assert all(lp < 0 for lp, m in zip(seq["logprobs"], seq["loss_mask"], strict=True) if m)
    sent = engine_requests(engine_url)[-2:]
    for r in sent:  # asked for the ids and logprobs; the engine's key, never the harness's
        assert r["body"]["return_token_ids"] is True and r["body"]["logprobs"] is True
        assert r["body"]["top_logprobs"] == 0 and r["body"]["stream"] is False
        assert r["authorization"] == f"Bearer {ENGINE_KEY}"
    assert [t["n_tools"] for t in doc["turns"]] == [1, 1]


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_are_translated_both_ways(proxy: CaptureServer, stream: bool) -> None:
    sid = _session(proxy)
    messages = run_anthropic(proxy.base_url, sid, stream=stream)
    assert messages[1]["content"][0]["type"] == "tool_use" and messages[1]["content"][0]["input"] == {"x": 1}
    assert messages[-1]["content"] == [{"type": "text", "text": "done: 2"}]
    doc = _doc(proxy, sid, include_messages="true")
    assert doc["trainable"] and doc["stats"]["n_roots"] == 1 and len(doc["sequences"]) == 1
    assert doc["turns"][1]["request_messages"][0] == {"role": "system", "content": "You are a careful agent."}
    assert doc["turns"][1]["request_messages"][-1]["role"] == "tool"


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_are_translated_both_ways(proxy: CaptureServer, stream: bool) -> None:
    sid = _session(proxy)
    items = run_responses(f"{proxy.base_url}/v1", sid, stream=stream)
    call = items[1]
    assert call["type"] == "function_call" and call["name"] == "add" and call["arguments"] == '{"x": 1}'
    assert items[-1]["type"] == "message" and items[-1]["content"][0] == {"type": "output_text", "text": "done: 2",
                                                                          "annotations": []}
    doc = _doc(proxy, sid, include_messages="true")
    assert doc["trainable"] and doc["stats"]["n_roots"] == 1 and len(doc["sequences"]) == 1
    assert doc["metadata"]["api_type"] == "openai_responses"
    second = doc["turns"][1]["request_messages"]
    assert second[0] == {"role": "system", "content": "You are a careful agent."}
    assert second[2]["tool_calls"][0]["function"]["name"] == "add" and second[3]["role"] == "tool"


@pytest.mark.parametrize("stream", [False, True])
def test_google_generate_content_is_translated_both_ways(proxy: CaptureServer, stream: bool) -> None:
    sid = _session(proxy)
    contents = run_google(proxy.base_url, sid, stream=stream)
    call = contents[1]["parts"][0]["functionCall"]
    assert contents[1]["role"] == "model" and call["name"] == "add" and call["args"] == {"x": 1}
    assert contents[-1]["parts"] == [{"text": 'done: {"result": "2"}'}]
    doc = _doc(proxy, sid, include_messages="true")
    assert doc["trainable"] and doc["stats"]["n_turns"] == 2 and doc["stats"]["n_roots"] == 1
    assert doc["metadata"]["api_type"] == "google"
    assert doc["turns"][1]["request_messages"][-1]["role"] == "tool"


def test_google_side_routes_and_bad_input(proxy: CaptureServer) -> None:
    sid = _session(proxy)
    base = f"{proxy.base_url}/v1beta/models/vllm"
    body = {"contents": [{"role": "user", "parts": [{"text": "hi " * 40}]}]}
    count = httpx.post(f"{base}:countTokens", json=body, timeout=10)
    assert count.status_code == 200 and count.json() == {"totalTokens": 30}
    by_query = httpx.post(f"{base}:generateContent", params={"key": sid}, json=body, timeout=10)
    assert by_query.status_code == 200 and by_query.json()["candidates"][0]["content"]["role"] == "model"
    assert httpx.post(f"{base}:generateContent", json=body, timeout=10).status_code == 401
    bad = httpx.post(f"{base}:generateContent", json={"contents": "hi"}, headers={"x-goog-api-key": sid}, timeout=10)
    assert bad.status_code == 400 and "contents" in bad.json()["error"]["message"]
    assert httpx.post(f"{base}:embedContent", json=body, headers={"x-goog-api-key": sid}, timeout=10).status_code == 404


def test_sglang_per_choice_prompt_ids_are_read(proxy: CaptureServer) -> None:
    sid = _session(proxy)
    run_chat(f"{proxy.base_url}/v1", sid, model="sglang")
    doc = _doc(proxy, sid)
    assert doc["trainable"] and doc["sequences"][0]["prompt_len"] > 0 and doc["stats"]["n_roots"] == 1


@pytest.mark.parametrize(("model", "code"), [("misaligned", "[FATAL] logprob_misalign"),
                                             ("stale", "[FATAL] no_prompt_ids"),
                                             ("pairing", "[WARN] logprob_pairing")])
def test_bad_engine_replies_are_caught_per_turn_with_a_reason(proxy: CaptureServer, model: str, code: str) -> None:
    sid = _session(proxy)
    messages = run_chat(f"{proxy.base_url}/v1", sid, model=model)
    assert messages[-1]["content"] == "done: 2"  # the harness is served all the same
    doc = _doc(proxy, sid)
    assert any(f.startswith(code) for f in doc["validation"]), doc["validation"]
    assert doc["trainable"] is False and doc["stats"]["n_trainable_tokens"] == 0


def test_engine_errors_reach_the_harness_as_errors_and_record_nothing(proxy: CaptureServer) -> None:
    sid = _session(proxy)
    resp = httpx.post(f"{proxy.base_url}/v1/chat/completions", headers={"Authorization": f"Bearer {sid}"},
                      json={"model": "error", "messages": [{"role": "user", "content": "hi"}]}, timeout=10)
    assert resp.status_code == 500 and "engine exploded" in resp.json()["error"]["message"]
    status = httpx.get(f"{proxy.base_url}/sessions/{sid}", timeout=10).json()
    assert status["upstream_errors"] == 1 and status["n_turns"] == 0


def test_unknown_keys_bad_bodies_and_unreachable_engines_get_clear_errors(proxy: CaptureServer, store) -> None:
    url = f"{proxy.base_url}/v1/chat/completions"
    body = {"model": "vllm", "messages": [{"role": "user", "content": "hi"}]}
    refused = httpx.post(url, json=body, headers={"Authorization": "Bearer sk-not-a-session"}, timeout=10)
    assert refused.status_code == 401 and "POST /sessions" in refused.json()["error"]["message"]
    sid = _session(proxy)
    auth = {"Authorization": f"Bearer {sid}"}
    assert httpx.post(url, content=b"{not json", headers=auth, timeout=10).status_code == 400
    assert httpx.post(url, json=[1, 2], headers=auth, timeout=10).status_code == 400
    assert httpx.post(url, json={"model": "vllm", "messages": "hi"}, headers=auth, timeout=10).status_code == 400
    assert httpx.post(url, json={**body, "n": 2}, headers=auth, timeout=10).status_code == 400
    bad = httpx.post(f"{proxy.base_url}/v1/messages", json={"messages": "x"}, headers={"x-api-key": sid}, timeout=10)
    assert bad.status_code == 400 and "messages" in bad.json()["error"]["message"]
    for bad_input in ({"input": 5}, {"input": [1]}, {"input": [{"type": "web_search_call"}]}, {"tools": "x"}):
        resp = httpx.post(f"{proxy.base_url}/v1/responses", json=bad_input, headers=auth, timeout=10)
        assert resp.status_code == 400 and resp.json()["error"]["message"], bad_input
    other = httpx.post(f"{proxy.base_url}/v2/complete", json={}, headers=auth, timeout=10)
    assert other.status_code == 404 and ":generateContent" in other.json()["error"]["message"]
    assert httpx.post(f"{proxy.base_url}/sessions", json={"metadata": {"purpose": "x"}}, timeout=10).status_code == 400
    assert httpx.get(f"{proxy.base_url}/sessions/nope/rollout", timeout=10).status_code == 404
    from tests.server_utils import free_port

    with CaptureServer(llm_url=f"http://127.0.0.1:{free_port()}/v1", port=0) as dead:
        sid = _session(dead)
        resp = httpx.post(f"{dead.base_url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {sid}"},
                          timeout=30)
        assert resp.status_code == 502 and "unreachable" in resp.json()["error"]["message"]


def test_the_admin_key_guards_the_session_routes_only(engine_url: str) -> None:
    with CaptureServer(llm_url=engine_url, port=0, admin_key="adm-1") as proxy:
        assert httpx.post(f"{proxy.base_url}/sessions", json={}, timeout=10).status_code == 401
        assert httpx.get(f"{proxy.base_url}/sessions", timeout=10).status_code == 401
        admin = {"Authorization": "Bearer adm-1"}
        sid = httpx.post(f"{proxy.base_url}/sessions", json={}, headers=admin, timeout=10).json()["session_id"]
        assert run_chat(f"{proxy.base_url}/v1", sid, tools=False)[-1]["content"].startswith("echo:")
        listed = httpx.get(f"{proxy.base_url}/sessions", headers=admin, timeout=10).json()["sessions"]
        assert [s["session_id"] for s in listed] == [sid] and listed[0]["turns"] == 1
        assert httpx.delete(f"{proxy.base_url}/sessions/{sid}", headers=admin, timeout=10).json() == {"deleted": True}
    with pytest.raises(ValueError, match="without an admin_key"):
        CaptureServer(llm_url=engine_url, host="0.0.0.0")


def test_a_retry_and_a_title_call_are_labelled_not_dropped(proxy: CaptureServer) -> None:
    """A retried first call (same prompt, abandoned) is discarded; a toolless side call is auxiliary."""
    sid = _session(proxy)
    url, auth = f"{proxy.base_url}/v1/chat/completions", {"Authorization": f"Bearer {sid}"}
    from .harness import SYSTEM, TASK, TOOL

    start = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    httpx.post(url, json={"model": "vllm", "messages": start, "tools": [TOOL]}, headers=auth, timeout=10)  # abandoned
    title = [{"role": "user", "content": "Title for: " + TASK}]
    httpx.post(url, json={"model": "vllm", "messages": title}, headers=auth, timeout=10)
    run_chat(f"{proxy.base_url}/v1", sid)  # the real attempt
    doc = _doc(proxy, sid, include_discarded="true")
    assert doc["stats"]["n_turns"] == 4 and doc["stats"]["n_discarded"] == 1
    roles = sorted(s["role"] for s in doc["sequences"])
    assert roles == ["agent", "auxiliary", "discarded"]
    assert [s["trainable"] for s in doc["sequences"] if s["role"] == "agent"] == [True]
    assert any(f.startswith("[WARN] discarded_turns") for f in doc["validation"])
    assert len(_doc(proxy, sid)["sequences"]) == 2  # discarded rows only when asked for


def test_trace_entries_carry_the_engines_ids_per_agent_call(proxy: CaptureServer) -> None:
    from openenv.capture.contract import to_trace_entries, to_turn_records

    sid = _session(proxy)
    messages = run_chat(f"{proxy.base_url}/v1", sid)
    session = proxy.registry.get(sid)
    doc = proxy.rollout(sid)
    entries = to_trace_entries(session.graph, doc)
    assert len(entries) == 2
    for entry, prompt in zip(entries, (messages[:2], messages[:4]), strict=True):
        assert entry["prompt_token_ids"] == render_prompt(prompt)
        assert entry["loss_mask"] == [0] * len(entry["prompt_token_ids"]) + [1] * len(entry["completion_token_ids"])
        assert len(entry["per_token_logps"]) == len(entry["completion_token_ids"])
    assert [r[1] for r in to_turn_records(session.graph, doc)] == [e["completion_token_ids"] for e in entries]
    with pytest.raises(ValueError, match="eval rollout"):
        to_trace_entries(session.graph, {**doc, "rollout_type": "eval"})
