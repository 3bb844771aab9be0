"""Name clashes between an environment's MCP tools and a harness's own tools (RFC 005)."""

from __future__ import annotations

from collections.abc import Collection

from openenv.core.env_server.mcp_types import RESERVED_TOOL_NAMES, Tool

__all__ = ["resolve_tool_conflicts"]


def resolve_tool_conflicts(
    env_tools: list[Tool], harness_builtin_tools: Collection[str], prefix: str = "env_"
) -> list[Tool]:
    """The environment tools to inject, renamed ``prefix + name`` where they clash with a built-in.

    The input is not changed (renamed tools are copies).

    Raises:
        ValueError: a tool uses a reserved orchestration name (``reset``, ``step``, ...), two
            environment tools share a name, or the prefixed name is itself taken (by a built-in or
            another environment tool).
    """
    names = [tool.name for tool in env_tools]
    reserved = sorted(set(names) & RESERVED_TOOL_NAMES)
    if reserved:
        raise ValueError("Tool names are reserved for orchestration controls: " + ", ".join(reserved))
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"Duplicate environment tool name: {name}")
        seen.add(name)

    builtins = set(harness_builtin_tools)
    used: set[str] = set()
    out: list[Tool] = []
    for tool in env_tools:
        name = tool.name
        if name in builtins:
            candidate = prefix + name
            if candidate in builtins or candidate in seen:
                raise ValueError(
                    f"Cannot resolve tool name conflict: '{name}' collides with a harness built-in "
                    f"tool and '{candidate}' is also taken"
                )
            name = candidate
        if name in used:
            raise ValueError(f"Tool name conflict after prefixing: {name}")
        used.add(name)
        out.append(tool.model_copy(update={"name": name}))
    return out
