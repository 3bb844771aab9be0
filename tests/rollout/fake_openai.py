"""A loopback OpenAI-compatible server for tests and the bench (FastAPI on 127.0.0.1).

Deterministic: what it answers depends only on the model name and the request.

| model | reply |
| --- | --- |
| ``echo`` | ``{"message": "m<n>"}``, n = how many observations the prompt holds |
| ``fenced`` | the same inside a fenced ```json block, with prose around it |
| ``malformed-once`` | prose without JSON, then a valid action once told it was not one |
| ``malformed`` | prose without JSON, always |
| ``wrong-type`` | ``{"message": 5}`` (fails the action schema) |
| ``tools`` | tool calls: ``add(a=2, b=3)`` first, then ``finish(answer=<last tool result>)`` |
| ``flaky`` | HTTP 503 for every other request (a retry succeeds), else as ``echo`` |
| ``fail-after-<N>`` | as ``echo`` for the first N requests of that model, then HTTP 500 |
| ``slow-<S>`` | waits S seconds, then as ``echo`` |
| ``instant`` | ``{"message": "hi"}`` at once (the bench) |

A suffix after ``#`` is ignored (``echo#mine`` is ``echo``): tests sharing one server tell their
requests apart by it. ``GET /_requests`` lists what it received (model, authorization header, body) for assertions.
Run standalone: ``python -m tests.rollout.fake_openai --port 8123``; ``--instant`` serves only the
``instant`` reply from a bare ASGI app (no routing, no parsing: the bench's model that costs nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections import defaultdict
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

__all__ = ["instant_app", "make_app"]

_INSTANT = orjson.dumps({
    "id": "c", "object": "chat.completion", "created": 0, "model": "instant",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"message": "hi"}'}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
})  # fmt: skip


def _observations(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") in ("user", "tool") and "not a valid action" not in str(m.get("content")))


def _completion(model: str, content: str | None, messages: list[dict[str, Any]], tool_calls: list | None = None) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 1
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": len(content or "x") // 4 + 1,
                  "total_tokens": prompt + len(content or "x") // 4 + 1},
    }  # fmt: skip


def _tool_reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[str | None, list]:
    """``add(a=2, b=3)``, then ``finish`` with ``answer`` = the last number seen when its schema has
    that parameter (no arguments otherwise)."""
    results = [m for m in messages if m.get("role") == "tool"]
    if not results:
        call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
    else:
        finish = next((t["function"] for t in tools if t["function"]["name"] == "finish"), {})
        wants_answer = "answer" in (finish.get("parameters") or {}).get("properties", {})
        found = re.findall(r"-?\d+", str(results[-1].get("content")))
        args = orjson.dumps({"answer": int(found[-1]) if found else 0} if wants_answer else {}).decode()
        call = {"id": f"call_{len(results) + 1}", "type": "function", "function": {"name": "finish", "arguments": args}}
    return None, [call]


def make_app() -> FastAPI:
    app = FastAPI()
    seen: list[dict[str, Any]] = []
    counts: dict[str, int] = defaultdict(int)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/_requests")
    async def requests() -> list[dict[str, Any]]:
        return seen

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": m, "object": "model"} for m in ("echo", "tools", "instant")]}

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> Response:
        raw = await request.body()
        body = orjson.loads(raw)
        model = str(body.get("model"))
        if model == "instant":
            return Response(_INSTANT, media_type="application/json")
        messages = body.get("messages") or []
        counts[model] += 1
        n = counts[model]
        if len(seen) < 5000:
            seen.append({"model": model, "authorization": request.headers.get("authorization"), "body": body})
        model = model.split("#", 1)[0]
        if model == "flaky" and n % 2 == 1:
            return JSONResponse({"error": {"message": "overloaded, try again"}}, status_code=503)
        m = re.fullmatch(r"fail-after-(\d+)", model)
        if m and n > int(m.group(1)):
            return JSONResponse({"error": {"message": "the model server broke"}}, status_code=500)
        m = re.fullmatch(r"slow-([\d.]+)", model)
        if m:
            await asyncio.sleep(float(m.group(1)))
        obs = _observations(messages)
        action = orjson.dumps({"message": f"m{obs}"}).decode()
        tool_calls = None
        retried = bool(messages) and "not a valid action" in str(messages[-1].get("content"))
        if model == "fenced":
            content = f"Let me think. I will answer:\n```json\n{action}\n```\nThat is my action."
        elif model == "malformed" or (model == "malformed-once" and not retried):
            content = "I would like to say hello to the environment."
        elif model == "wrong-type":
            content = '{"message": 5}'
        elif model == "tools":
            content, tool_calls = _tool_reply(messages, body.get("tools") or [])
        else:
            content = action
        return JSONResponse(_completion(model, content, messages, tool_calls))

    return app


async def instant_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Every POST gets the ``instant`` completion; ``GET /health`` answers 200."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    body = _INSTANT if scope["method"] == "POST" else b'{"status":"ok"}'
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--instant", action="store_true")
    args = parser.parse_args()
    app = instant_app if args.instant else make_app()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
