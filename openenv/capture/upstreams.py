"""Which engine a capture session's calls go to: the server's own, or one the trainer names when
it opens the session (``POST /sessions`` with ``llm_url``, as in OpenEnv 0.10), so one proxy can
front a train-tier and an eval-tier engine at once.

A named engine is probed once (``probe.validate_llm``) for the capture level it supports, and its
client is shared by every session on the same URL, model and credential (the key itself is never
part of a cache key or a reply).
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from typing import Any

import httpx

from .engine import EngineClient

__all__ = ["Engine", "EnginePool", "UpstreamSpec", "engine_key", "upstream_spec"]

MAX_ENGINES = 32  # distinct named engines per proxy


@dataclass(frozen=True)
class UpstreamSpec:
    llm_url: str
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    auth_header: str = "Authorization"

    @property
    def cache_key(self) -> tuple[str, str, str, str]:
        credential = hashlib.sha256((self.api_key or "").encode()).hexdigest()
        return self.llm_url.rstrip("/"), self.model, self.auth_header.lower(), credential


@dataclass
class Engine:
    """A client, the capture level it supports and the model to send (``None``: the harness's)."""

    client: EngineClient
    level: str
    model: str | None
    llm_url: str


def engine_key(url: str) -> str:
    """An engine URL compared for the allow-list: lower-case scheme and host, default port and a
    trailing ``/`` or ``/v1`` dropped (``http://H:8000/v1/`` == ``http://h:8000``)."""
    u = httpx.URL(url.strip())
    path = u.path.rstrip("/")
    path = path[:-3] if path.endswith("/v1") else path
    port = "" if u.port in (None, 80 if u.scheme == "http" else 443) else f":{u.port}"
    host = f"[{u.host}]" if ":" in u.host else u.host
    return f"{u.scheme.lower()}://{host.lower()}{port}{path}"


def upstream_spec(payload: dict[str, Any]) -> UpstreamSpec | None:
    """The engine a ``POST /sessions`` body names, or ``None``; ``ValueError`` when malformed."""
    url = payload.get("llm_url")
    if url is None:
        return None
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError("llm_url must be an http(s) URL")
    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"llm_url is not a URL: {exc}") from exc
    fields = {k: payload.get(k) for k in ("model", "api_key", "auth_header")}
    for name, value in fields.items():
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name} must be a string")
    return UpstreamSpec(url, fields["model"] or "", fields["api_key"], fields["auth_header"] or "Authorization")


class EnginePool:
    """The default engine plus the engines sessions have named (probed once each)."""

    def __init__(self, default: Engine, allowed: frozenset[str] = frozenset()) -> None:
        self.default = default
        self.allowed = allowed  # engine_key()s sessions may name besides the default; "*": any
        self._named: dict[tuple[str, str, str, str], Engine] = {}
        self._lock = asyncio.Lock()

    async def resolve(self, spec: UpstreamSpec | None) -> Engine:
        """The engine for ``spec``; ``RuntimeError`` with the probe's words when it is unusable."""
        if spec is None:
            return self.default
        if not self.allows(spec.llm_url):
            raise PermissionError(f"llm_url {spec.llm_url} is not an engine this proxy was allowed to use: start it "
                                  "with --allow-llm-url URL (the --llm-url engine is always allowed)")
        async with self._lock:
            known = self._named.get(spec.cache_key)
            if known is not None:
                return known
            if len(self._named) >= MAX_ENGINES:
                raise RuntimeError(f"this proxy already fronts {MAX_ENGINES} named engines")
            from .probe import validate_llm

            report = await asyncio.to_thread(validate_llm, spec.llm_url, spec.model, api_key=spec.api_key,
                                             auth_header=spec.auth_header, timeout=30.0, check_tools=False)
            if not report.reachable:
                raise RuntimeError(report.summary())
            engine = Engine(EngineClient(spec.llm_url, model=spec.model or None, api_key=spec.api_key,
                                         auth_header=spec.auth_header), report.capture_level, spec.model or None,
                            report.llm_url)
            self._named[spec.cache_key] = engine
            return engine

    def allows(self, url: str) -> bool:
        """Whether sessions may name the engine at ``url``."""
        return "*" in self.allowed or engine_key(url) in {engine_key(self.default.llm_url), *self.allowed}

    def known(self) -> list[dict[str, str]]:
        """The named engines (URL, model, level): never a key."""
        return [{"llm_url": e.llm_url, "model": e.model or "", "capture_level": e.level} for e in self._named.values()]

    async def aclose(self) -> None:
        for engine in [self.default, *self._named.values()]:
            await engine.client.aclose()
