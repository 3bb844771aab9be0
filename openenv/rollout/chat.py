"""An OpenAI-compatible chat client (``POST {base}/v1/chat/completions``) over httpx.

    endpoint = ModelEndpoint("http://127.0.0.1:8001/v1", model="qwen", api_key=os.environ["KEY"])
    async with ChatClient(endpoint) as chat:
        completion = await chat.complete([{"role": "user", "content": "hi"}])

Transient failures (connection errors, timeouts, HTTP 408/409/429/5xx) are retried with
exponential backoff, bounded in count (``retries``) and in wait (``max_backoff_s``; a server's
``Retry-After`` is honoured up to that bound); anything else raises ``ModelError`` at once.
The API key is sent as ``Authorization: Bearer`` and never kept anywhere but this object.
Plain ``http://`` endpoints (no proxy configured) go through ``http11.Pool``, a lean keep-alive
client; ``https://`` and proxied ones through httpx (``transport="httpx"`` forces it).
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from . import http11
from .errors import ModelError, ModelTimeoutError

__all__ = ["ChatClient", "Completion", "ModelEndpoint", "chat_url"]

_RETRY_STATUS = frozenset((408, 409, 425, 429, 500, 502, 503, 504))
_PROXY_VARS = ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the model is and how to sample it; ``api_key`` is never recorded (``settings``)."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float = 120.0
    transport: str = "auto"  # auto: the lean HTTP/1.1 client for plain http://, else httpx; or "httpx"
    capture: str | None = None  # "tokens"/"logprobs": ask the engine for its ids/logprobs (openenv.capture)

    def settings(self) -> dict[str, Any]:
        """What is recorded with each episode: everything but the key."""
        return {"base_url": self.base_url, "model": self.model, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "timeout_s": self.timeout_s,
                **({"capture": self.capture} if self.capture else {})}  # fmt: skip


@dataclass
class Completion:
    """One chat completion: its text, tool calls (``{"id", "name", "arguments"}``, arguments as
    the JSON text the model wrote), token counts, latency and how many HTTP attempts it took."""

    text: str | None
    tool_calls: list[dict[str, Any]]
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float
    finish_reason: str | None = None
    attempts: int = 1
    capture: dict[str, Any] | None = None  # with ``ModelEndpoint.capture``: prompt_ids, sampled_ids, logprobs, findings

    def message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        out: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in self.tool_calls
            ]
        return out


def chat_url(base_url: str) -> str:
    """``…/v1/chat/completions`` for a base URL given with or without ``/v1`` (or in full)."""
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if base.endswith("/v1"):
        return base + "/chat/completions"
    return base + "/v1/chat/completions"


class ChatClient:
    """Async chat completions with bounded retries; one pooled HTTP client for every episode."""

    def __init__(
        self,
        endpoint: ModelEndpoint,
        *,
        retries: int = 3,
        backoff_s: float = 0.25,
        max_backoff_s: float = 4.0,
        max_connections: int = 64,
        transport: str | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.retries = max(0, int(retries))
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._url = chat_url(endpoint.base_url)
        headers = {"content-type": "application/json"}
        if endpoint.api_key:
            headers["authorization"] = f"Bearer {endpoint.api_key}"
        transport = transport or endpoint.transport
        lean = transport == "fast" or (
            transport == "auto" and self._url.startswith("http://") and not any(os.environ.get(v) for v in _PROXY_VARS)
        )
        self._pool = http11.Pool(self._url, headers, max_idle=max_connections) if lean else None
        self._http = None if lean else httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(endpoint.timeout_s, connect=min(10.0, endpoint.timeout_s)),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        )

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
        if self._http is not None:
            await self._http.aclose()

    async def _post(self, body: bytes) -> tuple[int, bytes, str | None, str]:
        """One POST: status, body, Retry-After, reason (raises httpx or ``http11`` errors)."""
        if self._pool is not None:
            try:
                reply = await asyncio.wait_for(self._pool.post(body), self.endpoint.timeout_s)
            except asyncio.TimeoutError:
                raise httpx.ReadTimeout("no reply in time") from None
            except http11.HttpError as exc:
                raise httpx.TransportError(str(exc)) from exc
            return reply.status, reply.content, reply.headers.get("retry-after"), ""
        r = await self._http.post(self._url, content=body)
        return r.status_code, r.content, r.headers.get("retry-after"), r.reason_phrase

    def _body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> bytes:
        e = self.endpoint
        body: dict[str, Any] = {"model": e.model, "messages": messages}
        if e.temperature is not None:
            body["temperature"] = e.temperature
        if e.max_tokens is not None:
            body["max_tokens"] = e.max_tokens
        if tools:
            body["tools"] = tools
        if e.capture:
            from openenv.capture.engine import prepare_request

            body = prepare_request(body, e.capture)
        return orjson.dumps(body)

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Completion:
        """One completion; raises ``ModelError``/``ModelTimeoutError`` once retries are spent."""
        body = self._body(messages, tools)
        t0 = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            try:
                status, content, retry_after, reason = await self._post(body)
            except httpx.TimeoutException as exc:
                error: ModelError = ModelTimeoutError(
                    f"the model server did not answer within {self.endpoint.timeout_s:g} s ({type(exc).__name__})"
                )
                wait = None
            except httpx.TransportError as exc:
                error, wait = ModelError(f"cannot reach the model server at {self._url}: {exc}"), None
            else:
                if status == 200:
                    try:
                        return _parse(content, (time.perf_counter() - t0) * 1000, attempt, self.endpoint.capture)
                    except ModelError as exc:
                        error, wait = exc, None
                else:
                    error = ModelError(f"the model server answered HTTP {status}: {_detail(content, reason)}",
                                       status=status)  # fmt: skip
                    if status not in _RETRY_STATUS:
                        raise error
                    wait = _retry_after(retry_after)
            if attempt > self.retries:
                error.details["attempts"] = attempt
                raise error
            delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
            delay = min(self.max_backoff_s, wait) if wait is not None else delay * (0.75 + random.random() / 2)
            await asyncio.sleep(delay)


def _detail(content: bytes, reason: str) -> str:
    text = content[:300].decode("utf-8", "replace").strip()
    try:
        data = orjson.loads(content)
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
        if isinstance(data, dict) and isinstance(data.get("detail"), str):
            return data["detail"][:300]
    except orjson.JSONDecodeError:
        pass
    return text or reason or "no detail"


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _captured(data: dict[str, Any], level: str) -> dict[str, Any]:
    """The engine's ids and logprobs in a reply, read and checked as the capture proxy does."""
    from openenv.capture.checks import check_turn
    from openenv.capture.engine import read_reply

    reply = read_reply(data)
    report = check_turn(reply.prompt_ids, reply.sampled_ids, reply.logprobs, finish_reason=reply.finish_reason)
    return {"level": level, "prompt_ids": reply.prompt_ids, "sampled_ids": reply.sampled_ids,
            "logprobs": reply.logprobs if report.ok else None, "reply": reply.message,
            "sampled_tokens": reply.sampled_tokens,
            "findings": reply.findings + [str(f) for f in report.findings]}


def _parse(content: bytes, latency_ms: float, attempts: int, capture: str | None = None) -> Completion:
    try:
        data = orjson.loads(content)
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
        raise ModelError(f"the model server's reply is not a chat completion: {content[:200]!r}") from None
    calls = []
    for i, call in enumerate(message.get("tool_calls") or []):
        if not isinstance(call, dict):
            continue
        fn = call.get("function") if isinstance(call.get("function"), dict) else {}
        args = fn.get("arguments")
        calls.append({
            "id": str(call.get("id") or f"call_{i}"),
            "name": str(fn.get("name") or ""),
            "arguments": args if isinstance(args, str) else orjson.dumps(args or {}).decode(),
        })  # fmt: skip
    usage = data.get("usage") or {}
    text = message.get("content")
    return Completion(
        text=text if isinstance(text, str) else None,
        tool_calls=calls,
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        latency_ms=latency_ms,
        finish_reason=choice.get("finish_reason"),
        attempts=attempts,
        capture=_captured(data, capture) if capture else None,
    )
