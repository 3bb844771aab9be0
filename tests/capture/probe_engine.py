"""A loopback endpoint for the capture probe, behaving by the model asked for:

- ``hosted-logprobs``: refuses ``return_token_ids`` (as OpenAI does), answers logprobs without ids;
- ``hosted-text``: refuses ``return_token_ids`` and then ``logprobs``, answers text only;
- ``raw`` / ``processed``: token ids and logprobs, top-5 logprobs whose gap stays put (raw) or
  shrinks with the temperature (processed);
- ``prose``: token ids, but answers a tool manifest in prose.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

MODELS = ("hosted-logprobs", "hosted-text", "raw", "processed", "prose")


def _refuse(param: str) -> JSONResponse:
    return JSONResponse({"error": {"message": f"Unrecognized request argument supplied: {param}",
                                   "type": "invalid_request_error", "param": param, "code": None}}, status_code=400)


def _top(model: str, temperature: float) -> list[dict[str, Any]]:
    gap = 4.0 if model == "raw" else 4.0 / max(temperature, 1e-6)
    return [{"token": f"token_id:{7 + i}", "logprob": -0.05 - i * gap, "bytes": None} for i in range(5)]


async def chat(request: Request) -> JSONResponse:
    body = await request.json()
    model = body.get("model")
    if model.startswith("hosted") and "return_token_ids" in body:
        return _refuse("return_token_ids")
    if model == "hosted-text" and "logprobs" in body:
        return _refuse("logprobs")
    message: dict[str, Any] = {"role": "assistant", "content": "ok"}
    finish = "stop"
    if body.get("tools") and model != "prose":
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls /tmp"}'}}]}
        finish = "tool_calls"
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
    temperature = float(body.get("temperature", 1.0))
    if body.get("logprobs"):
        top = _top(model, temperature) if body.get("top_logprobs") else []
        choice["logprobs"] = {"content": [{"token": "token_id:7", "logprob": top[0]["logprob"] if top else -0.05,
                                           "bytes": None, "top_logprobs": top}]}
    reply: dict[str, Any] = {"id": "x", "object": "chat.completion", "created": 1, "model": model, "choices": [choice]}
    if body.get("return_token_ids"):
        choice["token_ids"] = [7]
        reply["prompt_token_ids"] = [1, 2, 3]
    return JSONResponse(reply)


async def models(_request: Request) -> JSONResponse:
    return JSONResponse({"object": "list", "data": [{"id": m, "object": "model"} for m in MODELS]})


def make_probe_engine() -> Starlette:
    async def health(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models),
                             Route("/health", health)])
