"""The engine side of capture: ask an OpenAI-compatible engine for its own token ids and logprobs,
and read them back from either placement.

Level ``tokens`` sends ``logprobs: true``, ``return_token_ids: true`` and ``top_logprobs: 0`` (vLLM
fills ``logprobs.content`` only when ``top_logprobs`` is set) and resets sampling knobs that distort
the distribution (``top_p``, ``top_k``, ``min_p``, penalties) to their no-op values, because a
trainer's importance ratio needs the logprob of the distribution actually sampled from; ``logprobs``
asks for logprobs only; ``text`` adds nothing. vLLM answers with top-level ``prompt_token_ids`` and
``choices[i].token_ids``; SGLang puts ``prompt_token_ids`` on each choice: both are read. A logprob
entry spelled ``token_id:N`` that disagrees with the id at its position drops the turn's logprobs.
Nothing is ever tokenized here. The engine's key stays in this process.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from .http1 import Http1Pool
from .jsonio import dumps_json, loads_json

__all__ = ["CAPTURE_LEVELS", "NON_POLICY_SAMPLING", "SAMPLING_KEYS", "EngineClient", "EngineReply", "UpstreamError",
           "auth_headers", "normalise_engine_base", "prepare_request", "read_reply", "training_sampling",
           "truncating_params"]

CAPTURE_LEVELS = ("tokens", "logprobs", "text")
NON_POLICY_SAMPLING: dict[str, float | int] = {"top_p": 1.0, "top_k": -1, "min_p": 0.0, "frequency_penalty": 0.0,
                                               "presence_penalty": 0.0, "repetition_penalty": 1.0}
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "frequency_penalty", "presence_penalty",
                 "repetition_penalty")
_MAX_TOKENS_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
_JSON_HEADERS = [(b"Content-Type", b"application/json"), (b"Accept", b"application/json")]
_ACCEPT = [(b"Accept", b"application/json")]


class UpstreamError(RuntimeError):
    """The engine could not be reached or answered an error (``status`` 502 when unreachable)."""

    def __init__(self, message: str, *, status: int = 502, body: Any = None) -> None:
        super().__init__(message)
        self.status, self.body = status, body


def auth_headers(api_key: str | None, header: str = "Authorization") -> dict[str, str]:
    """The header carrying the engine's key (``{}`` without one): ``Authorization: Bearer KEY``, or
    the bare key under any other header name (``x-api-key``)."""
    if not api_key:
        return {}
    name = (header or "Authorization").strip()
    return {name: f"Bearer {api_key}" if name.lower() == "authorization" else api_key}


def normalise_engine_base(url: str) -> str:
    """The engine's root without a trailing ``/v1`` (routes are then ``/v1/...``)."""
    base = url.rstrip("/")
    return base.removesuffix("/v1")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def training_sampling(sampling: dict[str, Any] | None) -> dict[str, float | int]:
    """An explicit training policy, checked: a finite positive ``temperature`` and the other knobs
    only at their no-op values (``top_k`` 0 or -1); returns it with every knob pinned to its no-op
    (``{}`` for ``None``). Anything else is a ``ValueError`` naming the field."""
    if sampling is None:
        return {}
    if not isinstance(sampling, dict):
        raise ValueError("sampling must be a JSON object")
    unknown = sorted(set(sampling) - {"temperature", *NON_POLICY_SAMPLING})
    if unknown:
        raise ValueError(f"unsupported training sampling fields: {', '.join(unknown)}")
    temperature = sampling.get("temperature")
    if not _number(temperature) or not 0 < temperature < float("inf"):
        raise ValueError("training sampling requires a finite positive temperature")
    for key, value in sampling.items():
        if key == "temperature":
            continue
        if not _number(value):
            raise ValueError(f"training sampling {key} must be numeric")
        neutral = NON_POLICY_SAMPLING[key]
        if value != neutral and not (key == "top_k" and value == 0):
            raise ValueError(f"training sampling requires {key}={neutral}")
    return {"temperature": float(temperature), **NON_POLICY_SAMPLING}


def truncating_params(request: dict[str, Any]) -> dict[str, Any]:
    """The sampling knobs in ``request`` set to something other than their no-op value."""
    return {k: request[k] for k, neutral in NON_POLICY_SAMPLING.items()
            if isinstance(request.get(k), (int, float)) and not isinstance(request.get(k), bool) and request[k] != neutral}


def prepare_request(request: dict[str, Any], level: str, *, max_output_tokens: int | None = None) -> dict[str, Any]:
    """The chat-completions body to send the engine for ``level`` (a new dict; messages untouched)."""
    body = dict(request)
    body["stream"] = False  # the reply is replayed to a streaming harness as SSE
    body.pop("stream_options", None)
    if level == "tokens":
        body.update(logprobs=True, return_token_ids=True)
        for key in truncating_params(body):
            body[key] = NON_POLICY_SAMPLING[key]
    elif level == "logprobs":
        body["logprobs"] = True
    if level != "text" and body.get("top_logprobs") is None:
        body["top_logprobs"] = 0
    if max_output_tokens:
        for key in _MAX_TOKENS_KEYS:
            if isinstance(body.get(key), int) and body[key] > max_output_tokens:
                body[key] = max_output_tokens
        if not any(body.get(k) is not None for k in _MAX_TOKENS_KEYS):
            body["max_tokens"] = max_output_tokens
    return body


@dataclass
class EngineReply:
    """One engine answer, read: the body as the harness will get it, and what capture keeps."""

    body: dict[str, Any]
    prompt_ids: list[Any]
    sampled_ids: list[Any]
    logprobs: list[Any] | None
    message: dict[str, Any]
    finish_reason: str | None
    usage: dict[str, Any] = field(default_factory=dict)
    latency_ms: float = 0.0
    findings: list[str] = field(default_factory=list)
    sampled_tokens: list[str] | None = None  # the engine's text of each sampled token, when it sent it


def _token_texts(entries: list[Any], n: int) -> list[str] | None:
    """Each sampled token's text from the logprobs entries (``None`` when the engine sent ids as
    ``token_id:N`` or the entries do not pair one to one with the ids)."""
    texts = [e.get("token") if isinstance(e, dict) else None for e in entries]
    if not texts or len(texts) != n or not all(isinstance(t, str) for t in texts):
        return None
    return None if any(t.startswith("token_id:") for t in texts) else texts


def _pairing_mismatch(ids: list[Any], entries: list[Any]) -> int | None:
    for pos, (tid, entry) in enumerate(zip(ids, entries, strict=False)):
        token = entry.get("token") if isinstance(entry, dict) else None
        if isinstance(token, str) and token.startswith("token_id:") and token[9:] != str(tid):
            return pos
    return None


def read_reply(body: dict[str, Any], latency_ms: float = 0.0) -> EngineReply:
    """What an engine's chat-completions reply carries for capture (vLLM or SGLang placement)."""
    choices = body.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    prompt_ids = body.get("prompt_token_ids") or choice.get("prompt_token_ids") or []
    if prompt_ids and not body.get("prompt_token_ids"):
        body["prompt_token_ids"] = prompt_ids
    sampled = choice.get("token_ids") or []
    entries = (choice.get("logprobs") or {}).get("content") or []
    findings: list[str] = []
    logprobs: list[Any] | None = [e.get("logprob") if isinstance(e, dict) else None for e in entries] or None
    if logprobs is not None and any(v is None for v in logprobs):
        findings.append(f"[WARN] null_logprobs: {sum(v is None for v in logprobs)} of {len(logprobs)} logprobs are null")
        logprobs = None
    if logprobs is not None and len(entries) == len(sampled):
        pos = _pairing_mismatch(sampled, entries)
        if pos is not None:
            findings.append(f"[WARN] logprob_pairing: the id and logprob channels disagree at position {pos}; "
                            "logprobs dropped")
            logprobs = None
    return EngineReply(body=body, prompt_ids=list(prompt_ids), sampled_ids=list(sampled), logprobs=logprobs,
                       message=dict(choice.get("message") or {}), finish_reason=choice.get("finish_reason"),
                       usage=dict(body.get("usage") or {}), latency_ms=latency_ms, findings=findings,
                       sampled_tokens=_token_texts(entries, len(sampled)))


class EngineClient:
    """One engine (``base_url`` is its API root, e.g. ``http://host:8000/v1``), shared by sessions.

    Calls go over ``Http1Pool`` (``openenv.capture.http1``): keep-alive HTTP/1.1 connections,
    bodies encoded and parsed with orjson. httpx's pool walked every connection (and polled each
    idle one) for every request and its request path cost about a millisecond of CPU per call:
    at 64 concurrent rollouts that was queueing delay."""

    def __init__(self, base_url: str, *, model: str | None = None, api_key: str | None = None,
                 auth_header: str = "Authorization", timeout_s: float = 600.0) -> None:
        base = base_url.rstrip("/")
        self.base_url = base if httpx.URL(base).path not in ("", "/") else f"{base}/v1"
        self.model = model
        self._prefix = httpx.URL(self.base_url).raw_path.decode().rstrip("/")
        self._headers = [(k.encode(), v.encode()) for k, v in auth_headers(api_key, auth_header).items()]
        self._timeout_s = timeout_s
        self._pool: Http1Pool | None = None  # opened by the first call, in the loop that serves

    def __repr__(self) -> str:  # the key never shows
        return f"EngineClient({self.base_url!r}, model={self.model!r})"

    async def _send(self, method: bytes, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        if self._pool is None:  # one TLS context, loaded once (the CA bundle takes ~50 ms)
            tls = httpx.create_ssl_context(trust_env=False) if self.base_url.startswith("https:") else None
            self._pool = Http1Pool(self.base_url, ssl_context=tls)
        headers = [*_JSON_HEADERS, *self._headers] if body is not None else [*_ACCEPT, *self._headers]
        status, _, content = await self._pool.request(method, self._prefix + path, headers, body,
                                                      timeout_s=self._timeout_s)
        return status, content

    async def chat(self, body: dict[str, Any]) -> EngineReply:
        """POST ``/chat/completions``; an unreachable engine or an error answer is ``UpstreamError``."""
        started = time.perf_counter()
        try:
            status, content = await self._send(b"POST", "/chat/completions", dumps_json(body))
        except (OSError, asyncio.TimeoutError) as exc:
            raise UpstreamError(f"the engine at {self.base_url} is unreachable: {type(exc).__name__}: {exc}") from exc
        latency = (time.perf_counter() - started) * 1000
        try:
            payload = loads_json(content)
        except ValueError:
            payload = None
        if status >= 400 or not isinstance(payload, dict):
            raise UpstreamError(f"the engine answered HTTP {status}", status=status if status >= 400 else 502,
                                body=payload if payload is not None else content[:2000].decode(errors="replace"))
        return read_reply(payload, latency)

    async def models(self) -> dict[str, Any]:
        try:
            status, content = await self._send(b"GET", "/models")
            payload = loads_json(content)
            if status < 400 and isinstance(payload, dict):
                return payload
        except (OSError, asyncio.TimeoutError, ValueError):
            pass
        return {"object": "list", "data": [{"id": self.model, "object": "model"}] if self.model else []}

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.aclose()
