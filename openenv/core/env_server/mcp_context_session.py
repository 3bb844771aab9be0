"""Tools that take a FastMCP ``Context`` run inside a real (in-memory) MCP client session.

Our fast path calls ``FastMCP.call_tool`` directly, with no MCP session: a tool that logs with
``ctx.info(...)``, keeps ``ctx.set_state``/``ctx.get_state`` or reads ``ctx.session_id`` would
raise there. Such tools (a parameter typed ``Context``, or a FastMCP dependency parameter such as
``CurrentContext()``) are called through a ``fastmcp.Client`` session instead, as 0.10 calls every
tool. One session is kept per environment on the event loop that first needs it (the server's
loop: state persists across the calls of one OpenEnv session, as on 0.10's ``/mcp`` and ``/ws``);
a call from another loop (a synchronous ``step``) opens a session for that loop, so state lives
for that call only, as with 0.10's in-process ``step``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

__all__ = ["ContextSessions", "needs_context"]

log = logging.getLogger("openenv.server")


def needs_context(tool: Any) -> bool:
    """Whether a FastMCP tool's function takes a ``Context`` (directly or as a dependency)."""
    fn = getattr(tool, "fn", None)
    if fn is None:
        return False
    from fastmcp.server.context import Context
    from fastmcp.server.dependencies import get_dependency_parameters
    from fastmcp.utilities.types import find_kwarg_by_type

    try:
        return bool(find_kwarg_by_type(fn, Context) or get_dependency_parameters(fn))
    except Exception:  # an unreadable signature: the fast path, as before
        return False


class ContextSessions:
    """The environment's held client session (one event loop at a time)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._client: Any = None
        self._opening: asyncio.Lock | None = None

    async def _session(self, make_client: Any) -> Any:
        loop = asyncio.get_running_loop()
        with self._guard:
            if self._loop is not loop:  # first use, or the old loop is gone (a finished step)
                self._loop, self._stack, self._client, self._opening = loop, None, None, asyncio.Lock()
            opening = self._opening
        assert opening is not None
        async with opening:
            if self._client is None:
                stack = contextlib.AsyncExitStack()
                client = await stack.enter_async_context(make_client())
                self._stack, self._client = stack, client
            return self._client

    async def call(self, make_client: Any, name: str, arguments: dict[str, Any]) -> Any:
        """Call ``name`` through the session; a fastmcp ``ToolResult``, or ``ToolError`` raised."""
        from fastmcp.exceptions import ToolError
        from fastmcp.tools.base import ToolResult

        client = await self._session(make_client)
        result = await client.call_tool_mcp(name, arguments)
        if result.isError:
            text = " ".join(getattr(block, "text", "") for block in result.content).strip()
            raise ToolError(text or f"Tool '{name}' failed")
        return ToolResult(content=list(result.content), structured_content=result.structuredContent, meta=result.meta)

    def close(self) -> None:
        """End the held session on its own loop (if that loop still runs); never blocks."""
        with self._guard:
            loop, stack = self._loop, self._stack
            self._loop = self._stack = self._client = self._opening = None
        if stack is None or loop is None or loop.is_closed() or not loop.is_running():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            task = loop.create_task(stack.aclose())
            task.add_done_callback(_log_failure)
        else:
            asyncio.run_coroutine_threadsafe(stack.aclose(), loop).add_done_callback(_log_failure)


def _log_failure(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("Closing an MCP context session failed: %s", future.exception())
