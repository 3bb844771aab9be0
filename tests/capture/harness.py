"""A loopback harness: the agent loop a coding agent runs, in each dialect, against a base URL.

One task: a system prompt, a user message and one tool (``add``); the harness calls the model,
runs the tool it asks for (answering "2"), and calls again until the model answers in text.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

SYSTEM = "You are a careful agent."
TASK = "Add one and one with the tool."
TOOL = {"type": "function", "function": {"name": "add", "description": "Add numbers.",
                                         "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}


def _sse_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]


def _from_chat_stream(text: str) -> dict[str, Any]:
    """Reassemble a chat-completions SSE stream into the reply message (as an SDK does)."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = None
    for event in _sse_events(text):
        choice = event["choices"][0]
        delta = choice.get("delta") or {}
        if delta.get("content"):
            message["content"] = (message["content"] or "") + delta["content"]
        for call in delta.get("tool_calls") or []:
            message.setdefault("tool_calls", []).append(
                {"id": call["id"], "type": "function", "function": dict(call["function"])})
        finish = choice.get("finish_reason") or finish
    return {"choices": [{"message": message, "finish_reason": finish}]}


def run_chat(base_url: str, key: str, *, model: str = "vllm", stream: bool = False, max_calls: int = 4,
             tools: bool = True) -> list[dict[str, Any]]:
    """The OpenAI chat-completions loop; the final message list (replies included)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30, trust_env=False) as http:
        for _ in range(max_calls):
            body: dict[str, Any] = {"model": model, "messages": messages, "stream": stream}
            if tools:
                body["tools"] = [TOOL]
            resp = http.post("/chat/completions", json=body)  # base_url ends in /v1, as an SDK's
            resp.raise_for_status()
            reply = _from_chat_stream(resp.text) if stream else resp.json()
            message = reply["choices"][0]["message"]
            messages.append({k: v for k, v in message.items() if k in ("role", "content", "tool_calls")})
            if not message.get("tool_calls"):
                return messages
            for call in message["tool_calls"]:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": "2"})
    return messages


def run_anthropic(base_url: str, key: str, *, model: str = "vllm", stream: bool = False, max_calls: int = 4) -> list[dict[str, Any]]:
    """The Anthropic Messages loop (``x-api-key``); the final message list."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    tool = {"name": "add", "description": "Add numbers.", "input_schema": TOOL["function"]["parameters"]}
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30, trust_env=False) as http:
        for _ in range(max_calls):
            resp = http.post("/v1/messages", json={"model": model, "system": SYSTEM, "messages": messages,
                                                   "tools": [tool], "max_tokens": 256, "stream": stream})
            resp.raise_for_status()
            content = _from_anthropic_stream(resp.text) if stream else resp.json()["content"]
            messages.append({"role": "assistant", "content": content})
            uses = [b for b in content if b["type"] == "tool_use"]
            if not uses:
                return messages
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": u["id"], "content": "2"}
                                                         for u in uses]})
    return messages


def _from_anthropic_stream(text: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    for event in _sse_events(text):
        if event["type"] == "content_block_start":
            blocks.append(dict(event["content_block"]))
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                blocks[event["index"]]["text"] += delta["text"]
            else:
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
        elif event["type"] == "content_block_stop" and event["index"] in partial:
            blocks[event["index"]]["input"] = json.loads(partial[event["index"]])
    return blocks


def run_responses(base_url: str, key: str, *, model: str = "vllm", stream: bool = False,
                  max_calls: int = 4) -> list[dict[str, Any]]:
    """The OpenAI Responses loop (codex's shape: instructions, input items, function tools); the
    final input item list (outputs included)."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]}]
    tool = {"type": "function", "name": "add", "description": "Add numbers.", "parameters": TOOL["function"]["parameters"]}
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30, trust_env=False) as http:
        for _ in range(max_calls):
            resp = http.post("/responses", json={"model": model, "instructions": SYSTEM, "input": items,
                                                 "tools": [tool], "max_output_tokens": 256, "stream": stream})
            resp.raise_for_status()
            if stream:
                done = [e for e in _sse_events(resp.text) if e["type"] == "response.completed"]
                output = done[-1]["response"]["output"]
            else:
                output = resp.json()["output"]
            items += output
            calls = [o for o in output if o["type"] == "function_call"]
            if not calls:
                return items
            items += [{"type": "function_call_output", "call_id": c["call_id"], "output": "2"} for c in calls]
    return items


def run_google(base_url: str, key: str, *, model: str = "vllm", stream: bool = False,
               max_calls: int = 4) -> list[dict[str, Any]]:
    """The Gemini ``generateContent`` loop (gemini-cli's shape: ``x-goog-api-key``, contents with
    parts, function declarations); the final contents."""
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": TASK}]}]
    tool = {"functionDeclarations": [{"name": "add", "description": "Add numbers.",
                                      "parameters": TOOL["function"]["parameters"]}]}
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    with httpx.Client(base_url=base_url, headers={"x-goog-api-key": key}, timeout=30, trust_env=False) as http:
        for _ in range(max_calls):
            resp = http.post(f"/v1beta/models/{model}:{method}", json={
                "contents": contents, "systemInstruction": {"parts": [{"text": SYSTEM}]}, "tools": [tool],
                "generationConfig": {"maxOutputTokens": 256}})
            resp.raise_for_status()
            reply = _sse_events(resp.text)[-1] if stream else resp.json()
            content = reply["candidates"][0]["content"]
            contents.append(content)
            calls = [p["functionCall"] for p in content["parts"] if "functionCall" in p]
            if not calls:
                return contents
            contents.append({"role": "user", "parts": [
                {"functionResponse": {"name": c["name"], **({"id": c["id"]} if "id" in c else {}),
                                      "response": {"result": "2"}}} for c in calls]})
    return contents
