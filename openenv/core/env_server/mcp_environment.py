"""``MCPEnvironment``: an environment whose actions are the tools of the author's FastMCP server.

Serves the published path ``openenv.core.env_server.mcp_environment``. Usage::

    from fastmcp import FastMCP
    from openenv.core.env_server.mcp_environment import MCPEnvironment

    class Calculator(MCPEnvironment):
        def __init__(self):
            mcp = FastMCP("calculator")

            @mcp.tool
            def add(a: float, b: float) -> float:
                return a + b

            super().__init__(mcp)

        def reset(self, seed=None, episode_id=None, **kwargs): ...
        def _step_impl(self, action, timeout_s=None, **kwargs): ...   # non-MCP actions

``step(ListToolsAction())`` and ``step(CallToolAction(tool_name=..., arguments=...))`` are
answered from the server in process (FastMCP's own ``list_tools``/``call_tool``, no transport);
a call's ``observation.result`` is fastmcp's ``CallToolResult`` (``.data``, ``.content``, ...), as on
0.10, and serialises to the same ``{content, structured_content, meta, data, is_error}`` object;
``POST /mcp`` and the WebSocket ``mcp`` frame use the same two methods. Sync tools run in a
worker thread (FastMCP's default), so a slow tool never blocks the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from abc import abstractmethod
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from fastmcp import FastMCP
from fastmcp.client.client import CallToolResult
from fastmcp.exceptions import NotFoundError, ToolError
from fastmcp.exceptions import ValidationError as FastMCPValidationError
from mcp.types import TextContent
from pydantic import ValidationError as PydanticValidationError

from openenv.core.env_server import mcp_direct
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_code_mode import CodeModeMixin
from openenv.core.env_server.mcp_context_session import ContextSessions, needs_context
from openenv.core.env_server.mcp_types import (
    RESERVED_TOOL_NAMES,
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolErrorType,
)
from openenv.core.env_server.mcp_types import ToolError as ToolErrorModel
from openenv.core.env_server.serialization import safe_error_text

__all__ = ["MCP_TOOL_CALL_TIMEOUT", "MCPEnvironment", "McpToolFailure"]

log = logging.getLogger("openenv.server")

MCP_TOOL_CALL_TIMEOUT = 30.0
"""Deadline of a tool call made through ``step`` without an explicit ``timeout_s``."""


class McpToolFailure(Exception):
    """A tool call that failed: ``error_type`` (a :class:`ToolErrorType`), a safe message, details."""

    def __init__(self, error_type: ToolErrorType, message: str, **details: Any) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.details = details


def _run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to completion from synchronous code (in a helper thread if a loop is running here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="openenv-mcp-sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _argument_errors(exc: BaseException) -> list[dict[str, Any]]:
    """Pydantic's per-field errors behind a FastMCP argument-validation failure."""
    cause = exc.__cause__ if isinstance(exc.__cause__, PydanticValidationError) else exc
    if not isinstance(cause, PydanticValidationError):
        return []
    out = []
    for err in cause.errors(include_url=False):
        out.append({"type": err["type"], "loc": [str(p) for p in err["loc"]], "msg": err["msg"]})
    return out


def _errors_message(tool_name: str, errors: list[dict[str, Any]]) -> str:
    parts = [f"{'.'.join(e['loc']) or '(arguments)'}: {e['msg']}" for e in errors]
    return f"Invalid arguments for tool {tool_name!r}: " + "; ".join(parts)


def _unwrap(result: Any, output_schema: dict[str, Any] | None) -> Any:
    """The plain value of a tool result (what FastMCP's client calls ``data``)."""
    structured = result.structured_content
    if structured is None:
        return None
    meta = (result.meta or {}).get("fastmcp") or {}
    if meta.get("wrap_result") or (output_schema or {}).get("x-fastmcp-wrap-result"):
        return structured.get("result")
    return structured


class MCPEnvironment(CodeModeMixin, Environment):
    """Base class of an environment that exposes the tools of a FastMCP server.

    Args:
        mcp_server: the author's ``fastmcp.FastMCP`` server (tools registered with ``@mcp.tool``).
        transform: optional observation transform (kept on ``self.transform``).

    Raises:
        ValueError: a tool uses a reserved name (``reset``, ``step``, ``state``, ``close``).

    Code mode (``get_callables``, ``execute_code``) and mode-aware tools (``@self.tool(mode=...)``)
    come from :class:`~openenv.core.env_server.mcp_code_mode.CodeModeMixin`.
    """

    def __init__(self, mcp_server: Any, transform: Any = None) -> None:
        if not isinstance(mcp_server, FastMCP):
            raise TypeError(f"MCPEnvironment needs a fastmcp.FastMCP server, got {type(mcp_server).__name__}")
        super().__init__(transform=transform)
        self._check_tool_names(mcp_server)
        self.mcp_server: Any = mcp_server
        self._mcp_client: Any = None
        self._output_schemas: dict[str, dict[str, Any] | None] = {}
        # name -> (the tool object last seen under it, whether it takes a Context): keyed on the
        # object, so a tool removed and re-added under the same name is looked at afresh
        self._context_tools: dict[str, tuple[Any, bool]] = {}
        self._context_sessions = ContextSessions()

    # -- the tools -------------------------------------------------------------------------

    @staticmethod
    def _check_tool_names(mcp_server: Any) -> None:
        names = {tool.name for tool in _run_sync(mcp_server.list_tools())}
        clash = sorted(names & RESERVED_TOOL_NAMES)
        if clash:
            raise ValueError(
                f"MCP tools cannot use reserved names: {clash}. "
                f"Reserved names are: {sorted(RESERVED_TOOL_NAMES)} (they are the environment's own API)"
            )

    def _require_server(self) -> Any:
        if self.mcp_server is None:
            raise RuntimeError("The MCP server is not available: the environment is closed")
        return self.mcp_server

    async def mcp_tools(self) -> list[dict[str, Any]]:
        """The tools as MCP lists them (``name``, ``description``, ``inputSchema``, ``outputSchema``, ...)."""
        tools = await self._require_server().list_tools()
        out = []
        for tool in tools:
            spec = tool.to_mcp_tool().model_dump(mode="json")
            self._output_schemas[tool.name] = spec.get("outputSchema")
            self._takes_context(tool.name, tool)
            if tool.name not in self._mode_tool_schemas:
                out.append(spec)
        return out + [dict(schema) for schema in self._visible_mode_schemas()]

    async def list_tools_async(self) -> list[Tool]:
        """The tools as :class:`Tool` models (``name``, ``description``, ``input_schema``)."""
        return [
            Tool(name=t["name"], description=t.get("description") or "", input_schema=t.get("inputSchema") or {})
            for t in await self.mcp_tools()
        ]

    async def mcp_call(self, name: str, arguments: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Call tool ``name``; returns ``{content, structured_content, meta, data, is_error}``.

        Raises:
            McpToolFailure: as :meth:`mcp_call_result`.
        """
        result = await self.mcp_call_result(name, arguments, timeout_s)
        return {
            "content": [block.model_dump(mode="json") for block in result.content],
            "structured_content": result.structured_content,
            "meta": result.meta,
            "data": result.data,
            "is_error": result.is_error,
        }

    async def mcp_call_result(self, name: str, arguments: dict[str, Any], timeout_s: float | None = None) -> Any:
        """Call tool ``name``; returns fastmcp's ``CallToolResult`` (``content``, ``structured_content``,
        ``meta``, ``data``: the plain value, ``is_error``), as 0.10's in-process ``step`` gives it.

        Raises:
            McpToolFailure: unknown tool, invalid arguments (naming the field), the tool raised
                (type and message, no traceback) or overran ``timeout_s``.
        """
        server = self._require_server()
        if not isinstance(arguments, dict):
            raise McpToolFailure(ToolErrorType.INVALID_ARGS, "Tool arguments must be a JSON object")
        if name in self._mode_tools:
            return await self._mode_tool_result(name, arguments, timeout_s)
        task = asyncio.ensure_future(self._tool_call(server, name, arguments))
        try:
            # wait (not wait_for): a sync tool's worker thread cannot be cancelled, so an overrun
            # call is left to finish in the background and the caller answered at the deadline.
            await asyncio.wait((task,), timeout=timeout_s)
        except asyncio.CancelledError:
            task.add_done_callback(_consume)
            raise
        if not task.done():
            task.add_done_callback(_consume)
            raise McpToolFailure(
                ToolErrorType.TIMEOUT, f"Tool '{name}' timed out after {timeout_s:g} seconds", timeout_s=timeout_s
            )
        try:
            result = task.result()
        except NotFoundError:
            raise McpToolFailure(ToolErrorType.TOOL_NOT_FOUND, f"Unknown tool: {name!r}") from None
        except (FastMCPValidationError, PydanticValidationError) as exc:
            errors = _argument_errors(exc)
            raise McpToolFailure(
                ToolErrorType.INVALID_ARGS, _errors_message(name, errors) if errors else safe_error_text(exc),
                errors=errors,
            ) from None
        except ToolError as exc:
            cause = exc.__cause__
            text = safe_error_text(cause) if cause is not None else safe_error_text(exc).removeprefix("ToolError: ")
            raise McpToolFailure(
                ToolErrorType.EXECUTION_ERROR, f"Tool '{name}' raised {text}",
                exception=type(cause).__name__ if cause is not None else "ToolError",
            ) from None
        except Exception as exc:  # anything else from the server: reported, never a traceback
            log.exception("MCP tool call failed")
            raise McpToolFailure(ToolErrorType.EXECUTION_ERROR, f"Tool '{name}' raised {safe_error_text(exc)}") from None
        if name not in self._output_schemas:
            await self.mcp_tools()
        return CallToolResult(
            content=list(result.content),
            structured_content=result.structured_content,
            meta=result.meta,
            data=_unwrap(result, self._output_schemas.get(name)),
            is_error=False,
        )

    async def _tool_call(self, server: Any, name: str, arguments: dict[str, Any]) -> Any:
        """The call (``mcp_direct``: FastMCP's own ``call_tool`` unless provably plain), or through a
        client session for a tool that takes a ``Context`` (its state persists per session, as on 0.10)."""
        tool = mcp_direct.direct_tool(server, name)  # the lookup the direct path makes anyway
        if tool is not None:
            if self._takes_context(name, tool):
                return await self._context_sessions.call(lambda: self.mcp_session(), name, arguments)
            return await mcp_direct.run_tool(server, tool, name, arguments)
        # not provably plain (middleware, mounts, transforms, versions...) or unknown: FastMCP's lookup
        if self._takes_context(name, await server.get_tool(name)):
            return await self._context_sessions.call(lambda: self.mcp_session(), name, arguments)
        return await server.call_tool(name, arguments)

    def _takes_context(self, name: str, tool: Any) -> bool:
        """Whether ``tool`` (found under ``name``; ``None``: not found) takes a ``Context``,
        worked out once per tool object."""
        known = self._context_tools.get(name)
        if known is None or known[0] is not tool:
            known = self._context_tools[name] = (tool, tool is not None and needs_context(tool))
        return known[1]

    async def _mode_tool_result(self, name: str, arguments: dict[str, Any], timeout_s: float | None) -> Any:
        """Call a mode-aware tool directly, as 0.10 does: its value as text and ``{"result": value}``."""
        try:
            func = self._mode_tool(name)
        except LookupError as exc:
            raise McpToolFailure(ToolErrorType.TOOL_NOT_FOUND, str(exc)) from None
        try:
            value = await self._call_mode_tool(func, arguments, timeout_s)
        except asyncio.TimeoutError:
            raise McpToolFailure(
                ToolErrorType.TIMEOUT, f"Tool '{name}' timed out after {timeout_s:g} seconds", timeout_s=timeout_s
            ) from None
        except TypeError as exc:
            raise McpToolFailure(ToolErrorType.INVALID_ARGS, f"Invalid arguments for tool {name!r}: {exc}") from None
        except Exception as exc:
            raise McpToolFailure(
                ToolErrorType.EXECUTION_ERROR, f"Tool '{name}' raised {safe_error_text(exc)}", exception=type(exc).__name__
            ) from None
        return CallToolResult(
            content=[TextContent(type="text", text=str(value))],
            structured_content={"result": value},
            meta=None,
            data=value,
            is_error=False,
        )

    # -- step ------------------------------------------------------------------------------

    async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """Answer MCP actions from the server; hand any other action to :meth:`_step_impl`."""
        if isinstance(action, (ListToolsAction, CallToolAction)):
            return await self._mcp_observation(action, timeout_s)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: self._step_impl(action, timeout_s=timeout_s, **kwargs))

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        # Not through step_async: a subclass overriding both (counting steps in each, as the
        # catalogue's jupyter_env does) would see one step twice. 0.10 keeps them apart too.
        if isinstance(action, (ListToolsAction, CallToolAction)):
            return _run_sync(self._mcp_observation(action, timeout_s))
        return self._step_impl(action, timeout_s=timeout_s, **kwargs)

    async def _mcp_observation(self, action: Any, timeout_s: float | None) -> Any:
        if isinstance(action, ListToolsAction):
            return await self._list_tools_observation()
        return await self._call_tool_observation(action, timeout_s)

    async def _list_tools_observation(self) -> ListToolsObservation:
        try:
            return ListToolsObservation(tools=await self.list_tools_async())
        except Exception as exc:
            return ListToolsObservation(tools=[], metadata={"error": safe_error_text(exc), "error_type": "list_tools_failed"})

    async def _call_tool_observation(self, action: CallToolAction, timeout_s: float | None) -> CallToolObservation:
        deadline = timeout_s if timeout_s is not None else MCP_TOOL_CALL_TIMEOUT
        try:
            result = await self.mcp_call_result(action.tool_name, action.arguments, deadline)
        except McpToolFailure as failure:
            return CallToolObservation(
                tool_name=action.tool_name,
                error=ToolErrorModel(error_type=failure.error_type, message=failure.message),
            )
        return CallToolObservation(tool_name=action.tool_name, result=result)

    @abstractmethod
    def _step_impl(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """Handle an action that is not ``list_tools``/``call_tool``."""

    # -- the published helpers -------------------------------------------------------------

    @property
    def mcp_client(self) -> Any:
        """A ``fastmcp.Client`` bound to the server in memory (built on first use)."""
        if self._mcp_client is None and self.mcp_server is not None:
            from fastmcp import Client

            self._mcp_client = Client(self.mcp_server)
        return self._mcp_client

    @contextlib.asynccontextmanager
    async def mcp_session(self) -> AsyncIterator[Any]:
        """An open ``fastmcp.Client`` session on the server (for authors who drive it directly)."""
        client = self.mcp_client
        if client is None:
            raise RuntimeError("The MCP client is not available: the environment is closed")
        async with client:
            yield client

    def close(self) -> None:
        """Drop the server and client; subclasses that override ``close`` call ``super().close()``."""
        sessions = getattr(self, "_context_sessions", None)
        if sessions is not None:
            sessions.close()
        self._mcp_client = None
        self.mcp_server = None


def _consume(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()
