"""LLM endpoint clients (serves the published ``openenv.core.llm_client``), over httpx.

``OpenAIClient`` speaks the OpenAI chat-completions API (OpenAI, vLLM, TGI, Ollama, the HF
Inference API, any compatible server); ``AnthropicClient`` the Anthropic Messages API. Neither
needs the vendor SDK::

    client = OpenAIClient("http://127.0.0.1", 8000, model="my-model")   # -> http://127.0.0.1:8000/v1
    text = await client.complete("What is 2+2?")
    client = create_llm_client("openai", model="gpt-4o", api_key="sk-...")

An endpoint that cannot be reached or answers an error raises :class:`LLMClientError`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from openenv.core.errors import LLMClientError

__all__ = [
    "AnthropicClient",
    "LLMClient",
    "LLMClientError",
    "LLMResponse",
    "OpenAIClient",
    "ToolCall",
    "create_llm_client",
]

DEFAULT_TIMEOUT_S = 120.0
_MAX_COMPLETION_TOKENS_PREFIXES = ("gpt-5-mini", "o1", "o3", "o4-mini")
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "required": []}


def _redact(endpoint: str) -> str:
    scheme, sep, rest = endpoint.partition("://")
    authority, slash, tail = rest.partition("/")
    if not sep or "@" not in authority:
        return endpoint
    return f"{scheme}{sep}***@{authority.rsplit('@', 1)[-1]}{slash}{tail}"


def _join_endpoint_port(endpoint: str, port: int | None) -> str:
    """Validate ``endpoint`` (http/https, a host, no credentials/query/fragment) and add ``port``."""
    safe = _redact(endpoint)
    try:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https"):
            raise ValueError("expected an http:// or https:// URL")
        if not parts.hostname:
            raise ValueError("missing host")
        if parts.username is not None or parts.password is not None:
            raise ValueError("credentials in the URL are not supported, use api_key")
        if parts.query or parts.fragment:
            raise ValueError("query strings and fragments are not supported")
        if parts.netloc.endswith(":"):
            raise ValueError("empty port")
        url_port = parts.port
        for candidate in (url_port, port):
            if candidate is not None and not 1 <= candidate <= 65535:
                raise ValueError(f"port {candidate} is out of range 1-65535")
    except ValueError as exc:
        raise ValueError(f"Invalid endpoint URL {safe!r}: {exc}") from exc
    if url_port is None and port is not None:
        parts = parts._replace(netloc=f"{parts.netloc}:{port}")
    elif url_port is not None and port is not None and port != url_port:
        raise ValueError(f"Endpoint URL {safe!r} already specifies port {url_port}, which conflicts with port={port}")
    return urlunsplit(parts._replace(path=parts.path.rstrip("/")))


@dataclass
class ToolCall:
    """One tool call the model asked for."""

    id: str
    name: str
    args: dict[str, Any]


@dataclass
class LLMResponse:
    """A reply's text and tool calls."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)

    def to_message_dict(self) -> dict[str, Any]:
        """The reply as an OpenAI-format assistant message."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.args)}}
                for c in self.tool_calls
            ]
        return msg


class LLMClient(ABC):
    """Base of endpoint clients: ``endpoint`` (may carry a port and path) plus an optional ``port``."""

    def __init__(self, endpoint: str, port: int | None) -> None:
        self.endpoint = endpoint
        self.port = port

    @abstractmethod
    async def complete(self, prompt: str, **kwargs: Any) -> str:
        """Send one user prompt; return the reply text (``temperature``/``max_tokens`` overrides)."""

    async def complete_with_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kwargs: Any
    ) -> LLMResponse:
        """Send OpenAI-format messages with MCP tool definitions; return text and tool calls."""
        raise NotImplementedError(f"{type(self).__name__} does not support tool calling")

    @property
    def base_url(self) -> str:
        return _join_endpoint_port(self.endpoint, self.port)


class _HttpClient(LLMClient):
    """Shared httpx plumbing: one POST, errors translated to :class:`LLMClientError`."""

    def __init__(self, endpoint: str, port: int | None, *, timeout_s: float) -> None:
        super().__init__(endpoint, port)
        self.base_url  # noqa: B018 - validate the endpoint now, as published
        self.timeout_s = timeout_s

    def _headers(self) -> dict[str, str]:
        return {}

    async def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as http:
                resp = await http.post(url, json=body, headers=self._headers())
        except httpx.HTTPError as exc:
            raise LLMClientError(f"LLM endpoint {_redact(url)} unreachable: {type(exc).__name__}: {exc}") from exc
        if resp.status_code >= 400:
            raise LLMClientError(
                f"LLM endpoint {_redact(url)} answered {resp.status_code}: {resp.text[:300]}",
                status_code=resp.status_code,
            )
        try:
            data = resp.json()
        except ValueError as exc:
            raise LLMClientError(f"LLM endpoint {_redact(url)} answered non-JSON") from exc
        if not isinstance(data, dict):
            raise LLMClientError(f"LLM endpoint {_redact(url)} answered a non-object")
        return data


class OpenAIClient(_HttpClient):
    """OpenAI-compatible chat completions; ``/v1`` is added when ``endpoint`` names no path."""

    def __init__(
        self,
        endpoint: str,
        port: int | None,
        model: str,
        api_key: str | None = None,
        system_prompt: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        use_max_completion_tokens: bool = False,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        super().__init__(endpoint, port, timeout_s=timeout_s)
        self.model = model
        self.api_key = api_key if api_key is not None else "not-needed"
        self.system_prompt = system_prompt
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._tokens_param = "max_completion_tokens" if use_max_completion_tokens else "max_tokens"
        self._omit_temperature = use_max_completion_tokens

    @property
    def api_url(self) -> str:
        base = self.base_url
        return base + "/v1" if urlsplit(base).path in ("", "/") else base

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def _body(self, messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            self._tokens_param: kwargs.get("max_tokens", self.max_tokens),
        }
        if not self._omit_temperature:
            body["temperature"] = kwargs.get("temperature", self.temperature)
        return body

    async def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        data = await self._post(self.api_url + "/chat/completions", body)
        try:
            return data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMClientError("LLM endpoint answered without choices[0].message") from exc

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages.append({"role": "user", "content": prompt})
        return (await self._chat(self._body(messages, **kwargs))).get("content") or ""

    async def complete_with_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kwargs: Any
    ) -> LLMResponse:
        body = self._body(messages, **kwargs)
        openai_tools = [
            {"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                              "parameters": _clean_schema(t.get("inputSchema", _EMPTY_SCHEMA))}}
            for t in tools
        ]
        if openai_tools:
            body["tools"] = openai_tools
        msg = await self._chat(body)
        calls = [
            ToolCall(id=c["id"], name=c["function"]["name"], args=_arguments(c["function"].get("arguments")))
            for c in msg.get("tool_calls") or []
        ]
        return LLMResponse(content=msg.get("content") or "", tool_calls=calls)


class AnthropicClient(_HttpClient):
    """Anthropic Messages API (``POST {endpoint}/v1/messages``)."""

    API_VERSION = "2023-06-01"

    def __init__(
        self,
        endpoint: str,
        port: int | None,
        model: str,
        api_key: str | None = None,
        system_prompt: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        super().__init__(endpoint, port, timeout_s=timeout_s)
        self.model = model
        self.api_key = api_key if api_key is not None else "not-needed"
        self.system_prompt = system_prompt
        self.temperature = temperature
        self.max_tokens = max_tokens

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key, "anthropic-version": self.API_VERSION}

    async def _messages(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        data = await self._post(self.base_url + "/v1/messages", body)
        return [b for b in data.get("content") or [] if isinstance(b, dict)]

    def _body(self, messages: list[dict[str, Any]], system: str | None, **kwargs: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": kwargs.get("temperature", self.temperature),
            "max_tokens": kwargs.get("max_tokens", self.max_tokens),
        }
        if system:
            body["system"] = system
        return body

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        blocks = await self._messages(self._body([{"role": "user", "content": prompt}], self.system_prompt, **kwargs))
        return "".join(b.get("text", "") for b in blocks if b.get("type") == "text")

    async def complete_with_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kwargs: Any
    ) -> LLMResponse:
        system, converted = _to_anthropic(messages)
        body = self._body(converted, system or self.system_prompt, **kwargs)
        if tools:
            body["tools"] = [
                {"name": t["name"], "description": t.get("description", ""),
                 "input_schema": _clean_schema(t.get("inputSchema", _EMPTY_SCHEMA))}
                for t in tools
            ]
        blocks = await self._messages(body)
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        calls = [ToolCall(id=b["id"], name=b["name"], args=b.get("input") or {}) for b in blocks if b.get("type") == "tool_use"]
        return LLMResponse(content=text, tool_calls=calls)


_HOSTED: dict[str, tuple[str, int, type[_HttpClient]]] = {
    "openai": ("https://api.openai.com", 443, OpenAIClient),
    "anthropic": ("https://api.anthropic.com", 443, AnthropicClient),
}


def create_llm_client(
    provider: str,
    model: str,
    api_key: str,
    *,
    system_prompt: str | None = None,
    temperature: float = 0.0,
    max_tokens: int = 4096,
) -> LLMClient:
    """A client for a hosted provider (``"openai"`` or ``"anthropic"``)."""
    key = provider.lower()
    if key not in _HOSTED:
        raise ValueError(f"Unsupported provider: {provider!r}. Supported: {sorted(_HOSTED)}")
    endpoint, port, cls = _HOSTED[key]
    extra: dict[str, Any] = {}
    if cls is OpenAIClient and model.startswith(_MAX_COMPLETION_TOKENS_PREFIXES):
        extra["use_max_completion_tokens"] = True
    return cls(endpoint, port, model, api_key=api_key, system_prompt=system_prompt,
               temperature=temperature, max_tokens=max_tokens, **extra)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError) as exc:
        raise LLMClientError(f"tool call arguments are not JSON: {str(raw)[:200]}") from exc
    return value if isinstance(value, dict) else {}


def _clean_schema(schema: Any) -> dict[str, Any]:
    """An MCP ``inputSchema`` as function-calling APIs take it (one object schema)."""
    if not isinstance(schema, dict):
        return dict(_EMPTY_SCHEMA)
    schema = dict(schema)
    if "oneOf" in schema:
        schema = _object_option(schema["oneOf"])
    if "allOf" in schema:
        merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        for sub in schema["allOf"]:
            if isinstance(sub, dict):
                merged["properties"].update(sub.get("properties", {}))
                merged["required"].extend(sub.get("required", []))
        schema = merged
    if "anyOf" in schema:
        schema = _object_option(schema["anyOf"])
    schema.setdefault("type", "object")
    if schema["type"] == "object":
        schema.setdefault("properties", {})
    return schema


def _object_option(options: Any) -> dict[str, Any]:
    found = next((o for o in options or [] if isinstance(o, dict) and o.get("type") == "object"), None)
    return dict(found) if found is not None else {"type": "object", "properties": {}, "required": []}


def _to_anthropic(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """OpenAI-format messages as ``(system text, Anthropic messages)``."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg["role"]
        if role == "system":
            system.append(msg["content"])
        elif role == "user":
            out.append({"role": "user", "content": msg["content"]})
        elif role == "assistant" and msg.get("tool_calls"):
            content: list[dict[str, Any]] = [{"type": "text", "text": msg["content"]}] if msg.get("content") else []
            for call in msg["tool_calls"]:
                content.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                                "input": _arguments(call["function"]["arguments"])})
            out.append({"role": "assistant", "content": content})
        elif role == "assistant":
            out.append({"role": "assistant", "content": msg.get("content", "")})
        elif role == "tool":
            result = {"type": "tool_result", "tool_use_id": msg["tool_call_id"], "content": msg["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
    return "\n\n".join(system), out
