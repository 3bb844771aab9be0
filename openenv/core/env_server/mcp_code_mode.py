"""0.10's code mode and mode-aware tools for :class:`MCPEnvironment` (RFC 003).

- ``get_callables()``: the tools as plain Python functions (FastMCP tools' own functions plus the
  mode-aware ones visible in the current mode); ``execute_code(code)`` runs ``code`` with them in
  scope and returns an ``Observation`` whose ``metadata`` holds ``result`` (the code's ``result``
  variable) or ``error`` (``"Syntax error: ..."`` or the exception's message). The code runs in
  the server process, unsandboxed, as on 0.10: it is for code the environment author trusts.
- ``@self.tool(mode="simulation"|"production"|None)`` registers a tool for one mode (kept beside
  the FastMCP server, listed and called only when ``self._mode`` matches) or, with ``None``, for
  every mode (also registered on the FastMCP server). ``self._mode`` is the author's attribute.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from openenv.core.env_server.mcp_types import RESERVED_TOOL_NAMES
from openenv.core.env_server.types import Observation

__all__ = ["VALID_MODES", "CodeModeMixin"]

VALID_MODES = frozenset({"production", "simulation"})

_JSON_TYPES = {int: "integer", "int": "integer", float: "number", "float": "number", bool: "boolean", "bool": "boolean"}


def _input_schema(func: Callable[..., Any]) -> dict[str, Any]:
    """0.10's schema of a mode-aware tool: each parameter typed integer/number/boolean/string."""
    schema: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
    for name, param in inspect.signature(func).parameters.items():
        try:
            json_type = _JSON_TYPES.get(param.annotation, "string")
        except TypeError:  # an unhashable annotation
            json_type = "string"
        schema["properties"][name] = {"type": json_type}
        if param.default is inspect.Parameter.empty:
            schema["required"].append(name)
    return schema


class CodeModeMixin:
    """Code mode and mode-aware tools; mixed into ``MCPEnvironment`` (needs ``mcp_server``)."""

    mcp_server: Any

    @property
    def _mode_tools(self) -> dict[str, dict[str | None, Callable[..., Any]]]:
        return self.__dict__.setdefault("_openenv_mode_tools", {})

    @property
    def _mode_tool_schemas(self) -> dict[str, dict[str | None, dict[str, Any]]]:
        return self.__dict__.setdefault("_openenv_mode_tool_schemas", {})

    @property
    def supports_code_mode(self) -> bool:
        """Whether :meth:`execute_code` is available (always, as on 0.10)."""
        return True

    def _current_mode(self) -> str | None:
        return getattr(self, "_mode", None)

    def tool(self, mode: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator registering a tool for ``mode`` (``None``: every mode).

        Raises:
            ValueError: an unknown mode, or a reserved tool name (``reset``, ``step``, ``state``, ``close``).
        """
        if mode is not None and mode not in VALID_MODES:
            raise ValueError(f"Invalid mode '{mode}'. Mode must be 'production', 'simulation', or None.")

        def register(func: Callable[..., Any]) -> Callable[..., Any]:
            name = func.__name__
            if name in RESERVED_TOOL_NAMES:
                raise ValueError(
                    f"Tool name '{name}' is reserved and cannot be used. "
                    f"Reserved names are: {sorted(RESERVED_TOOL_NAMES)}"
                )
            self._mode_tools.setdefault(name, {})[mode] = func
            if mode is None:
                if self.mcp_server is None:
                    raise RuntimeError("The MCP server is not available: the environment is closed")
                return self.mcp_server.tool()(func)
            self._mode_tool_schemas.setdefault(name, {})[mode] = {
                "name": name,
                "description": func.__doc__ or "",
                "inputSchema": _input_schema(func),
            }
            return func

        return register

    def _visible_mode_schemas(self) -> list[dict[str, Any]]:
        mode, out = self._current_mode(), []
        for schemas in self._mode_tool_schemas.values():
            schema = schemas.get(None, schemas.get(mode))
            if schema is not None:
                out.append(schema)
        return out

    def _mode_tool(self, name: str) -> Callable[..., Any] | None:
        """The mode-aware function for ``name`` (``None`` if ``name`` is not mode-aware).

        Raises:
            LookupError: ``name`` is mode-aware but not available in the current mode.
        """
        funcs = self._mode_tools.get(name)
        if funcs is None:
            return None
        mode = self._current_mode()
        func = funcs.get(None, funcs.get(mode))
        if func is None:
            raise LookupError(f"Tool '{name}' not available in {mode} mode")
        return func

    async def _call_mode_tool(self, func: Callable[..., Any], arguments: dict[str, Any], timeout_s: float | None) -> Any:
        if inspect.iscoroutinefunction(func):
            return await asyncio.wait_for(func(**arguments), timeout_s)
        return await asyncio.wait_for(asyncio.to_thread(func, **arguments), timeout_s)

    def get_callables(self) -> dict[str, Callable[..., Any]]:
        """The tools visible in the current mode as plain functions, by name."""
        from openenv.core.env_server.mcp_environment import _run_sync

        callables: dict[str, Callable[..., Any]] = {}
        if self.mcp_server is not None:
            for tool in _run_sync(self.mcp_server.list_tools()):
                fn = getattr(tool, "fn", None)
                if callable(fn):
                    callables[tool.name] = fn
        mode = self._current_mode()
        for name, funcs in self._mode_tools.items():
            if None in funcs:
                callables.setdefault(name, funcs[None])
            elif mode in funcs:
                callables[name] = funcs[mode]
        return callables

    def execute_code(self, code: str) -> Observation:
        """Run ``code`` with the tools in scope; ``metadata["result"]`` or ``metadata["error"]``."""
        namespace: dict[str, Any] = dict(self.get_callables())
        found: dict[str, Any] = {}
        try:
            exec(code, namespace, found)  # noqa: S102 - 0.10's code mode: the author's trusted code
        except SyntaxError as exc:
            return Observation(done=False, reward=0.0, metadata={"error": f"Syntax error: {exc}"})
        except Exception as exc:
            return Observation(done=False, reward=0.0, metadata={"error": str(exc)})
        return Observation(done=False, reward=0.0, metadata={"result": found.get("result")})

