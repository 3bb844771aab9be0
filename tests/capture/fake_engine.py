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

``POST /v1/completions`` is vLLM's token route (what TRL's AsyncGRPO worker calls): ``prompt`` a
list of token ids, the reply ``choices[0].token_ids`` and ``logprobs.token_logprobs``. The ids
come from ``make_engine(complete=fn)``, ``fn(prompt_ids, body) -> ids`` (a test that knows its
tokenizer), else the byte ids of "ok" and an end token.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
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


def _logprobs(n: int) -> list[float]:
    return [-(0.01 + 0.1 * (i % 5)) for i in range(n)]


def make_engine(complete: Callable[[list[int], dict[str, Any]], list[int]] | None = None) -> Starlette:
    seen: list[dict[str, Any]] = []

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append({"body": body, "authorization": request.headers.get("authorization")})
        prompt = [int(t) for t in body["prompt"]]
        ids = complete(prompt, body) if complete is not None else _ids("ok") + [SPECIAL["end"]]
        ids = ids[: int(body.get("max_tokens") or len(ids))]
        choice = {"index": 0, "text": "", "token_ids": ids, "finish_reason": "stop",
                  "logprobs": {"token_logprobs": _logprobs(len(ids)), "tokens": [f"token_id:{t}" for t in ids]}}
        return JSONResponse({"id": f"cmpl-{len(seen)}", "object": "text_completion", "model": body.get("model"),
                             "choices": [choice], "prompt_token_ids": prompt})

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
        logprobs = _logprobs(len(sampled))
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
                             Route("/v1/completions", completions, methods=["POST"]),
                             Route("/v1/models", models), Route("/_requests", requests)])
