"""What a recording run knows about its environment: name, version, schema hashes, provider.

Read once per run from the server's ``GET /metadata`` and ``GET /schema`` (remembered per URL
for ``CACHE_TTL_S`` so many short sessions against one server ask once); an unreachable or older
server just leaves the fields empty (the env name then falls back to the client class).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from .jsonable import canonical_hash

__all__ = ["EnvInfo", "fetch_env_info", "fetch_env_info_async", "http_base"]

_TIMEOUT_S = 5.0
CACHE_TTL_S = 60.0


@dataclass(frozen=True)
class EnvInfo:
    name: str | None = None
    version: str | None = None
    action_schema_hash: str | None = None
    observation_schema_hash: str | None = None


_cache: dict[str, tuple[float, EnvInfo]] = {}


def _cached(root: str) -> EnvInfo | None:
    hit = _cache.get(root)
    return hit[1] if hit is not None and time.monotonic() - hit[0] < CACHE_TTL_S else None


def _remember(root: str, info: EnvInfo) -> EnvInfo:
    if info.name is not None:
        _cache[root] = (time.monotonic(), info)
    return info


def _client_options(root: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    # plain http needs no certificate store (building one costs ~20 ms per client)
    return {
        "timeout": _TIMEOUT_S,
        "headers": headers or None,
        "trust_env": False,
        **({} if root.startswith("https://") else {"verify": False}),
    }


def http_base(base_url: str) -> str:
    """The HTTP root of a client's ``base_url`` (``ws://h/ws`` -> ``http://h``)."""
    url = base_url.rstrip("/")
    if url.endswith("/ws"):
        url = url[:-3]
    for ws, http in (("wss://", "https://"), ("ws://", "http://")):
        if url.startswith(ws):
            return http + url[len(ws) :]
    return url if "://" in url else "http://" + url


def _info(metadata: Any, schema: Any) -> EnvInfo:
    meta = metadata if isinstance(metadata, dict) else {}
    sch = schema if isinstance(schema, dict) else {}
    version = meta.get("version")
    return EnvInfo(
        name=meta.get("name") if isinstance(meta.get("name"), str) else None,
        version=None if version is None else str(version),
        action_schema_hash=canonical_hash(sch["action"]) if "action" in sch else None,
        observation_schema_hash=canonical_hash(sch["observation"]) if "observation" in sch else None,
    )


def _json(response: httpx.Response) -> Any:
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def fetch_env_info(base_url: str, headers: dict[str, str] | None = None) -> EnvInfo:
    """Blocking read of ``/metadata`` and ``/schema`` (empty ``EnvInfo`` when unreachable); ``headers``
    are the client's (a bearer token), sent with both reads."""
    root = http_base(base_url)
    if (hit := _cached(root)) is not None:
        return hit
    try:
        with httpx.Client(**_client_options(root, headers)) as http:
            info = _info(_json(http.get(f"{root}/metadata")), _json(http.get(f"{root}/schema")))
    except httpx.HTTPError:
        return EnvInfo()
    return _remember(root, info)


async def fetch_env_info_async(base_url: str, headers: dict[str, str] | None = None) -> EnvInfo:
    """``fetch_env_info`` for async callers."""
    root = http_base(base_url)
    if (hit := _cached(root)) is not None:
        return hit
    try:
        async with httpx.AsyncClient(**_client_options(root, headers)) as http:
            info = _info(_json(await http.get(f"{root}/metadata")), _json(await http.get(f"{root}/schema")))
    except httpx.HTTPError:
        return EnvInfo()
    return _remember(root, info)
