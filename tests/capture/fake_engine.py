"""A loopback engine that answers like vLLM (and SGLang), for capture tests.

It renders the conversation with a toy chat template and tokenizes it by bytes (id = byte + 16;
ids 1..15 are special tokens), so turn k+1's prompt ids really start with turn k's prompt + sampled
ids, as with a real engine. What it answers depends on the model name:

    vllm        prompt_token_ids at the top level, choices[0].token_ids, logprobs "token_id:N"
    sglang      prompt_token_ids on the choice instead
    stale       no ids and no logprobs (an endpoint served without the capture flags)
    misaligned  one logprob fewer than sampled ids
    pairing     a logprob entry naming another token id than its position's
    error       HTTP 500 with an OpenAI-style error body
    slow        vllm after 0.3 s
    wait-<ms>   vllm after that many milliseconds (the bench's generation time)
    json        vllm, answering ``{"message": "m<k>"}`` (k = user messages so far): an echo env's action

The reply: a tool call to the first offered tool while no tool result is in the conversation, else
the text "done: <last tool result>" (or "echo: <last user message>" when no tools are offered).
``GET /_requests`` lists the bodies and Authorization headers received.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

SPECIAL = {"system": 1, "user": 2, "assistant": 3, "tool": 4, "end": 5}


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _ids(text: str) -> list[int]:
    return [b + 16 for b in text.encode()]


def render_body(message: dict[str, Any]) -> list[int]:
    """An assistant message's ids as the model emits them (content or calls, then end)."""
    if message.get("tool_calls"):
        call = message["tool_calls"][0]["function"]
        args = json.dumps(json.loads(call["arguments"] or "{}"), sort_keys=True)
        return _ids(f"CALL {call['name']} {args}") + [SPECIAL["end"]]
    return _ids(_text(message.get("content"))) + [SPECIAL["end"]]


def render_prompt(messages: list[dict[str, Any]]) -> list[int]:
    ids: list[int] = []
    for m in messages:
        ids.append(SPECIAL[m["role"]])
        ids += render_body(m) if m["role"] == "assistant" else _ids(_text(m.get("content"))) + [SPECIAL["end"]]
    return ids + [SPECIAL["assistant"]]


def reply_message(body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    messages, tools = body["messages"], body.get("tools") or []
    if body.get("model") == "json":
        k = sum(m["role"] == "user" for m in messages)
        return {"role": "assistant", "content": json.dumps({"message": f"m{k}"})}, "stop"
    results = [m for m in messages if m["role"] == "tool"]
    if tools and not results:
        name = tools[0]["function"]["name"]
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{len(messages)}", "type": "function", "function": {"name": name, "arguments": '{"x": 1}'}}]}, "tool_calls"
    if results:
        return {"role": "assistant", "content": f"done: {_text(results[-1]['content'])}"}, "stop"
    user = [m for m in messages if m["role"] == "user"]
    return {"role": "assistant", "content": f"echo: {_text(user[-1]['content']) if user else ''}"}, "stop"


def make_engine() -> Starlette:
    seen: list[dict[str, Any]] = []

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        mode = body.get("model") or "vllm"
        seen.append({"body": body, "authorization": request.headers.get("authorization")})
        if mode == "error":
            return JSONResponse({"error": {"message": "engine exploded", "type": "server_error"}}, status_code=500)
        if mode == "slow":
            await asyncio.sleep(0.3)
        if mode.startswith("wait-"):
            await asyncio.sleep(int(mode[5:]) / 1000)
        message, finish = reply_message(body)
        prompt = render_prompt(body["messages"])
        sampled = render_body(message)
        logprobs = [-(0.01 + 0.1 * (i % 5)) for i in range(len(sampled))]
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        reply: dict[str, Any] = {"id": f"cmpl-{len(seen)}", "object": "chat.completion", "created": 1, "model": mode,
                                 "choices": [choice],
                                 "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(sampled),
                                           "total_tokens": len(prompt) + len(sampled)}}
        if mode != "stale" and body.get("logprobs"):
            entries = [{"token": f"token_id:{t}", "logprob": lp, "bytes": None, "top_logprobs": []}
                       for t, lp in zip(sampled, logprobs, strict=True)]
            if mode == "misaligned":
                entries = entries[:-1]
            if mode == "pairing":
                entries[1]["token"] = "token_id:99999"
            choice["logprobs"] = {"content": entries}
        if mode != "stale" and body.get("return_token_ids"):
            choice["token_ids"] = sampled
            if mode == "sglang":
                choice["prompt_token_ids"] = prompt
            else:
                reply["prompt_token_ids"] = prompt
        return JSONResponse(reply)

    async def models(_request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "vllm", "object": "model"}]})

    async def requests(_request: Request) -> JSONResponse:
        return JSONResponse(seen)

    async def health(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/health", health),
                             Route("/v1/models", models), Route("/_requests", requests)])
