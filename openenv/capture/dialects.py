"""The harness-facing dialects: OpenAI chat completions (as they are) and Anthropic Messages
(translated to chat for the engine and back), each answered as JSON or as the SSE stream the
harness asked for. The engine is always asked without streaming; a stream is replayed from its reply.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

__all__ = ["anthropic_reply", "anthropic_sse", "anthropic_to_chat", "chat_sse"]

_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "end_turn"}


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def chat_sse(reply: dict[str, Any]) -> Iterator[bytes]:
    """A chat-completions reply as ``chat.completion.chunk`` events, ending with ``[DONE]``."""
    base = {"id": reply.get("id") or f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion.chunk",
            "created": reply.get("created") or int(time.time()), "model": reply.get("model")}
    choice = (reply.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    yield _sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
    if message.get("content"):
        yield _sse({**base, "choices": [{"index": 0, "delta": {"content": message["content"]}, "finish_reason": None}]})
    for i, call in enumerate(message.get("tool_calls") or []):
        delta = {"tool_calls": [{"index": i, "id": call.get("id"), "type": "function",
                                 "function": {"name": (call.get("function") or {}).get("name"),
                                              "arguments": (call.get("function") or {}).get("arguments") or ""}}]}
        yield _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    yield _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason") or "stop"}],
                **({"usage": reply["usage"]} if reply.get("usage") else {})})
    yield b"data: [DONE]\n\n"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def anthropic_to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic Messages request as a chat-completions request (raises ValueError when malformed)."""
    if not isinstance(body.get("messages"), list):
        raise ValueError("messages must be a list")
    out: list[dict[str, Any]] = []
    if body.get("system"):
        out.append({"role": "system", "content": _text_of(body["system"])})
    for m in body["messages"]:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise ValueError("each message needs role user or assistant")
        content = m.get("content")
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
            continue
        if not isinstance(content, list):
            raise ValueError("message content must be a string or a list of blocks")
        if m["role"] == "assistant":
            calls = [{"id": b.get("id"), "type": "function",
                      "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})}}
                     for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
            msg: dict[str, Any] = {"role": "assistant", "content": _text_of(content) or None}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
            continue
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text_of(b.get("content"))})
        text = _text_of(content)
        if text or not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            out.append({"role": "user", "content": text})
    chat: dict[str, Any] = {"model": body.get("model"), "messages": out}
    if body.get("tools"):
        chat["tools"] = [{"type": "function", "function": {"name": t.get("name"), "description": t.get("description", ""),
                                                           "parameters": t.get("input_schema") or {"type": "object"}}}
                         for t in body["tools"] if isinstance(t, dict)]
    for key in ("max_tokens", "temperature", "top_p", "top_k"):
        if body.get(key) is not None:
            chat[key] = body[key]
    if body.get("stop_sequences"):
        chat["stop"] = body["stop_sequences"]
    return chat


def anthropic_reply(reply: dict[str, Any], model: str | None) -> dict[str, Any]:
    """A chat-completions reply as an Anthropic Messages response."""
    choice = (reply.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    blocks: list[dict[str, Any]] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except ValueError:
            args = {"_raw": fn.get("arguments")}
        blocks.append({"type": "tool_use", "id": call.get("id") or f"toolu_{uuid.uuid4().hex[:20]}",
                       "name": fn.get("name"), "input": args})
    usage = reply.get("usage") or {}
    return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": model or reply.get("model"),
            "content": blocks, "stop_reason": _STOP.get(choice.get("finish_reason") or "stop", "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0)}}


def anthropic_sse(message: dict[str, Any]) -> Iterator[bytes]:
    """An Anthropic Messages response as its event stream."""
    start = {**message, "content": [], "stop_reason": None,
             "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 0}}
    yield _sse({"type": "message_start", "message": start}, "message_start")
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield _sse({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                       "content_block_start")
            yield _sse({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}},
                       "content_block_delta")
        else:
            yield _sse({"type": "content_block_start", "index": i,
                        "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}},
                       "content_block_start")
            yield _sse({"type": "content_block_delta", "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}},
                       "content_block_delta")
        yield _sse({"type": "content_block_stop", "index": i}, "content_block_stop")
    yield _sse({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]}}, "message_delta")
    yield _sse({"type": "message_stop"}, "message_stop")
