"""What a policy needs to know about an environment: its metadata, schemas and (MCP) tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from .errors import RolloutError

__all__ = ["EnvSpec", "fetch_env_spec", "mentions_tools", "openai_tools"]


@dataclass(frozen=True)
class EnvSpec:
    """``GET /metadata`` and ``GET /schema`` of an env server, and its tools when it has them."""

    name: str
    description: str = ""
    version: str | None = None
    action_schema: dict[str, Any] = field(default_factory=dict)
    observation_schema: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] | None = None  # [{"name", "description", "input_schema"}]


async def fetch_env_spec(base_url: str, *, timeout_s: float = 10.0, headers: dict[str, str] | None = None) -> EnvSpec:
    """Read the env's metadata and schemas (a missing ``/metadata`` is tolerated; ``/schema`` is not)."""
    base = base_url.rstrip("/")
    async with httpx.AsyncClient(timeout=timeout_s, headers=headers) as http:
        try:
            meta = await http.get(f"{base}/metadata")
            schema = await http.get(f"{base}/schema")
        except httpx.HTTPError as exc:
            raise RolloutError(f"cannot reach the environment at {base}: {exc}", code="ENV_UNREACHABLE") from exc
    if schema.status_code != 200:
        raise RolloutError(f"{base}/schema answered HTTP {schema.status_code}", code="ENV_UNREACHABLE")
    m = meta.json() if meta.status_code == 200 else {}
    s = schema.json()
    return EnvSpec(
        name=str(m.get("name") or "environment"),
        description=str(m.get("description") or ""),
        version=m.get("version"),
        action_schema=s.get("action") or {},
        observation_schema=s.get("observation") or {},
    )


def mentions_tools(action_schema: dict[str, Any]) -> bool:
    """Whether the action schema admits the MCP ``call_tool`` step action (an ``MCPEnvironment``
    serves ``CallToolAction``'s schema; ``list_tools`` is answered without being in it)."""
    import orjson

    return b'"call_tool"' in orjson.dumps(action_schema)


def openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI ``tools`` (function definitions) from MCP tool specs."""
    out = []
    for tool in tools:
        params = tool.get("input_schema") or tool.get("inputSchema") or {"type": "object", "properties": {}}
        out.append({
            "type": "function",
            "function": {"name": tool["name"], "description": tool.get("description") or "", "parameters": params},
        })  # fmt: skip
    return out
