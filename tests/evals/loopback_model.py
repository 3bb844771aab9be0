"""A loopback OpenAI-compatible model for eval tests: it answers "Repeat exactly: X" with X,
except that it misspells "hugging face" (so one sample of the echo task scores INCORRECT).

Any other prompt gets "I don't know". ``GET /_requests`` lists the request bodies received.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

PREFIX = "Repeat exactly: "


def answer(prompt: str) -> str:
    if not prompt.startswith(PREFIX):
        return "I don't know"
    phrase = prompt[len(PREFIX):]
    return "hugging fase" if phrase == "hugging face" else phrase


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def make_model() -> Starlette:
    seen: list[dict[str, Any]] = []

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append(body)
        users = [m for m in body["messages"] if m["role"] == "user"]
        reply = answer(_text(users[-1]["content"]).strip() if users else "")
        n_prompt = sum(len(_text(m.get("content")).split()) for m in body["messages"])
        return JSONResponse({
            "id": f"chatcmpl-{len(seen)}", "object": "chat.completion", "created": 1, "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(reply.split()),
                      "total_tokens": n_prompt + len(reply.split())},
        })

    async def requests(_request: Request) -> JSONResponse:
        return JSONResponse(seen)

    async def health(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/health", health),
                             Route("/_requests", requests)])
