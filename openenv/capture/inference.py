"""``InferenceClient``: 0.10's async client to one OpenAI-compatible engine, for code that drives
the engine itself rather than through the capture proxy.

``completion(request)`` prepares the body for the client's capture level (``engine.prepare_request``),
POSTs ``/chat/completions`` (retrying 408/409/429/5xx up to 3 attempts, honouring a ``Retry-After``
of up to 60 s) and returns the engine's JSON in one shape: ``prompt_token_ids`` at the top level
(SGLang's per-choice placement hoisted), ``reasoning`` renamed ``reasoning_content``, each logprob
entry stamped with its ``token_id`` — or the logprobs dropped where the two channels disagree — and
the sampling actually sent under ``_openenv_sampling``. Failures are ``UpstreamError`` subclasses.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from .engine import CAPTURE_LEVELS, NON_POLICY_SAMPLING, UpstreamError, _pairing_mismatch, truncating_params

__all__ = ["InferenceClient", "UpstreamError", "UpstreamHTTPError", "UpstreamRequestError", "UpstreamTimeoutError",
           "UpstreamTransportError", "normalize_response", "openai_api_base", "prepare_capture_request"]


class UpstreamRequestError(UpstreamError):
    """The request cannot be represented for this engine."""


class UpstreamHTTPError(UpstreamError):
    """The engine answered a non-2xx status (``status_code``, ``body``)."""

    def __init__(self, status_code: int, body: Any = None) -> None:
        detail = body
        if isinstance(body, dict):
            error = body.get("error")
            detail = error.get("message") if isinstance(error, dict) else error or body
        super().__init__(f"upstream returned {status_code}: {str(detail)[:400]}", status=status_code, body=body)
        self.status_code = status_code


class UpstreamTimeoutError(UpstreamError):
    """The engine did not answer in time."""


class UpstreamTransportError(UpstreamError):
    """The engine could not be reached (refused, reset, DNS)."""


def openai_api_base(url: str) -> str:
    """The API root: a base URL without a path gets ``/v1``; one with a path is already the root."""
    base = url.rstrip("/")
    return base if httpx.URL(base).path not in ("", "/") else f"{base}/v1"


def prepare_capture_request(request: dict[str, Any], *, served_model: str | None = None,
                            capture_level: str = "tokens") -> dict[str, Any]:
    """0.10's ``prepare_request``: add what makes a reply capturable, editing ``request``'s top level
    in place (messages are copied before a rewrite) and returning it. ``tokens``: logprobs, token ids,
    distorting sampling knobs reset; ``logprobs``: logprobs only; ``text``: nothing. A prior turn's
    ``reasoning_content`` is sent as vLLM's ``reasoning`` (dropped at ``text``)."""
    if capture_level == "tokens":
        request["logprobs"] = True
        request["return_token_ids"] = True
        for key in truncating_params(request):
            request[key] = NON_POLICY_SAMPLING[key]
    elif capture_level == "logprobs":
        request["logprobs"] = True
    if capture_level != "text" and request.get("top_logprobs") is None:
        request["top_logprobs"] = 0
    messages = request.get("messages")
    if isinstance(messages, list):
        rewritten = []
        for message in messages:
            if isinstance(message, dict) and message.get("reasoning_content") is not None:
                message = dict(message)
                reasoning = message.pop("reasoning_content")
                if capture_level != "text":
                    message["reasoning"] = reasoning
            rewritten.append(message)
        request["messages"] = rewritten
    request.pop("_served_model", None)
    return request


def normalize_response(response: dict[str, Any]) -> dict[str, Any]:
    """Put a chat-completions reply in one shape, in place (see the module docstring)."""
    choices = response.get("choices")
    if not isinstance(choices, list):
        return response
    if not response.get("prompt_token_ids") and choices and isinstance(choices[0], dict):
        if choices[0].get("prompt_token_ids"):
            response["prompt_token_ids"] = choices[0]["prompt_token_ids"]
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        message = choice.get("message")
        if isinstance(message, dict) and message.get("reasoning_content") is None and message.get("reasoning") is not None:
            message["reasoning_content"] = message.pop("reasoning")
        ids = choice.get("token_ids")
        entries = (choice.get("logprobs") or {}).get("content") or []
        if isinstance(ids, list) and len(ids) == len(entries):
            if _pairing_mismatch(ids, entries) is not None:
                choice["logprobs"] = None
            else:
                for token_id, entry in zip(ids, entries, strict=True):
                    if isinstance(entry, dict):
                        entry.setdefault("token_id", token_id)
    return response


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


class InferenceClient:
    """Async client to one engine; one per server, shared by sessions. ``provider`` ``openai``,
    ``vllm`` or ``hf`` (OpenAI-compatible); an Anthropic upstream is not supported here."""

    RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
    MAX_ATTEMPTS = 3
    BACKOFF_S = 2.0
    MAX_RETRY_AFTER_S = 60.0

    def __init__(self, base_url: str, *, served_model: str | None = None, api_key: str | None = None,
                 auth_header: str = "Authorization", capture_level: str = "tokens", provider: str = "openai",
                 timeout_s: float = 900.0) -> None:
        if provider == "anthropic":
            raise ValueError("an Anthropic Messages upstream is not supported by InferenceClient here: point it at "
                             "an OpenAI-compatible engine (vLLM, SGLang); Anthropic-speaking harnesses are "
                             "translated by the capture proxy")
        if provider not in ("openai", "hf", "vllm"):
            raise ValueError(f"unknown upstream provider: {provider!r} (openai, vllm, hf)")
        if capture_level not in CAPTURE_LEVELS:
            raise ValueError(f"capture_level must be one of {', '.join(CAPTURE_LEVELS)}, not {capture_level!r}")
        self.base_url = openai_api_base(base_url)
        self.served_model, self.capture_level, self.provider = served_model, capture_level, provider
        self.api_key, self.auth_header = api_key or None, auth_header or "Authorization"
        self.param_fixes: list[Any] = []  # 0.10 learns parameter fixes from 400s; none are applied here
        self._timeout = httpx.Timeout(timeout_s, connect=30.0)
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:  # the key never shows
        return f"InferenceClient({self.base_url!r}, served_model={self.served_model!r})"

    def _headers(self) -> dict[str, str]:
        if not self.api_key:
            return {}
        bearer = self.auth_header.lower() == "authorization"
        return {self.auth_header: f"Bearer {self.api_key}" if bearer else self.api_key}

    def _http(self) -> httpx.AsyncClient:
        if self._client is None or self._client.is_closed:
            self._client = httpx.AsyncClient(base_url=self.base_url, timeout=self._timeout, headers=self._headers(),
                                             trust_env=False)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and not self._client.is_closed:
            await self._client.aclose()
        self._client = None

    async def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        """One non-streaming chat completion, prepared for capture and normalised on the way back."""
        body = prepare_capture_request(dict(request), capture_level=self.capture_level)
        body["stream"] = False  # one JSON reply
        body.pop("stream_options", None)
        if self.served_model:
            body["model"] = self.served_model
        payload = await self._post("/chat/completions", body)
        if not isinstance(payload, dict):
            raise UpstreamHTTPError(502, payload)
        payload["_openenv_sampling"] = {k: body[k] for k in ("temperature", *NON_POLICY_SAMPLING) if k in body}
        return normalize_response(payload)

    async def list_models(self) -> dict[str, Any]:
        try:
            response = await self._http().get("/models")
        except httpx.RequestError as exc:
            raise self._transport_error(exc) from exc
        self._raise_for_status(response)
        return response.json()

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        for attempt in range(1, self.MAX_ATTEMPTS + 1):
            try:
                response = await self._http().post(path, json=body)
            except httpx.RequestError as exc:
                raise self._transport_error(exc) from exc
            if response.is_success:
                try:
                    return response.json()
                except ValueError as exc:
                    raise UpstreamHTTPError(502, response.text[:2000]) from exc
            if response.status_code not in self.RETRY_STATUSES or attempt == self.MAX_ATTEMPTS:
                self._raise_for_status(response)
            delay = _retry_after(response)
            await asyncio.sleep(min(self.BACKOFF_S * 2 ** (attempt - 1) if delay is None else delay,
                                    self.MAX_RETRY_AFTER_S))
        raise AssertionError("unreachable: the last attempt returns or raises")

    @staticmethod
    def _raise_for_status(response: httpx.Response) -> None:
        if response.is_success:
            return
        text = response.text.strip()
        body: Any = None
        if text:
            try:
                body = json.loads(text)
            except json.JSONDecodeError:
                body = text
        raise UpstreamHTTPError(response.status_code, body)

    @staticmethod
    def _transport_error(exc: httpx.RequestError) -> UpstreamError:
        if isinstance(exc, httpx.TimeoutException):
            return UpstreamTimeoutError(f"engine timed out: {exc}", status=504)
        return UpstreamTransportError(f"could not reach engine: {exc}")
