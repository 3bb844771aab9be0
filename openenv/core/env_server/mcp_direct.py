"""``tools/call`` on a FastMCP server without the layers that cannot change its outcome.

``FastMCP.call_tool`` wraps every call in a ``Context``, its middleware chain, a second
``Context``, an OpenTelemetry span, and a tool lookup that aggregates providers in an anyio task
group, applies transforms, session visibility and per-tool auth; then it runs ``tool._run`` and
maps its exceptions. :func:`call_tool` skips the outer layers when the server is provably plain:

* the server is a ``FastMCP`` (not a subclass or proxy) of a fastmcp version whose ``call_tool``
  this module was checked against (:data:`VERIFIED_FASTMCP`), with ``call_tool`` and its lookup
  not wrapped (on the class or the instance) by instrumentation;
* every middleware leaves ``tools/call`` alone (none overrides ``__call__``, ``on_message``,
  ``on_request`` or ``on_call_tool``, and none injects tools), as the default
  ``DereferenceRefsMiddleware`` does;
* its only provider is its own local one, with no transforms on either (``server.disable``,
  ``enable``, namespaces and tool transforms are transforms), and no MCP request context is
  current (so no per-session visibility applies);
* the tool is a ``FunctionTool`` found by that name, enabled, model-visible and without ``auth``.

Then the tool runs through the same ``tool._run`` inside a ``Context`` and the same span, and its
exceptions are logged and mapped exactly as ``call_tool`` does: the result or error is the full
path's. A sync tool's body still runs on a worker thread, through
:func:`openenv.core.env_server.tool_threads.run_sync` instead of anyio's ``to_thread`` (fewer
wake-ups; the same thread, context and cancellation guarantees): ``call_sync_fn_in_threadpool``
as fastmcp's ``function_tool`` and ``server.dependencies`` use it (a tool's body; a tool taking a
``Context``) is replaced at import, when it is fastmcp's own, by one that takes that path only
inside a direct call and anyio's everywhere else. Anything else
(and a name not found, so hashed app-tool names resolve as before) takes ``server.call_tool``.
The checks run on every call, so tools added, removed or disabled later are seen at once.
``tests/mcp/test_mcp_direct.py`` runs each kind of call through both paths.
"""

from __future__ import annotations

import functools
from contextvars import ContextVar
from typing import Any

import fastmcp
import httpx
from fastmcp import FastMCP
from fastmcp.exceptions import FastMCPError, ToolError, ValidationError
from fastmcp.server import dependencies as fastmcp_dependencies
from fastmcp.server import server as fastmcp_server
from fastmcp.server.context import Context
from fastmcp.server.middleware import Middleware
from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from fastmcp.server.providers import LocalProvider
from fastmcp.server.providers.base import _hashed_lookup
from fastmcp.server.server import _is_backend_tool
from fastmcp.server.server import logger as fastmcp_logger
from fastmcp.server.telemetry import server_span
from fastmcp.server.transforms.visibility import is_enabled
from fastmcp.tools import function_tool
from fastmcp.tools.base import Tool
from fastmcp.tools.function_tool import FunctionTool
from fastmcp.utilities import async_utils
from mcp.server.lowlevel.server import request_ctx
from pydantic import ValidationError as PydanticValidationError

from openenv.core.env_server import tool_threads

__all__ = ["VERIFIED_FASTMCP", "call_tool", "direct_tool", "enabled", "run_tool"]

VERIFIED_FASTMCP = ("3.4.",)
"""fastmcp versions whose ``FastMCP.call_tool`` the direct path mirrors; others use the full path."""

_HOOKS = frozenset({"__call__", "_dispatch_handler", "on_message", "on_request", "on_call_tool"})
_FULL_PATH = frozenset({"call_tool", "get_tool", "_get_tool", "_run_middleware"})
_ORIGINALS = {name: getattr(FastMCP, name) for name in _FULL_PATH}


def enabled() -> bool:
    """True when the installed fastmcp is one the direct path was checked against, unpatched."""
    source = fastmcp_server.__file__
    own = all(getattr(fn, "__code__", None) is not None and fn.__code__.co_filename == source for fn in _ORIGINALS.values())
    return own and fastmcp.__version__.startswith(VERIFIED_FASTMCP)


_ENABLED = enabled()

_DIRECT_TOOL: ContextVar[Any] = ContextVar("openenv_direct_tool", default=None)
_FASTMCP_HOP = async_utils.call_sync_fn_in_threadpool
_HOP_USERS = (function_tool, fastmcp_dependencies)  # a tool's body; a tool taking a Context


async def _tool_body_in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """fastmcp's ``call_sync_fn_in_threadpool`` for tools: :mod:`tool_threads` inside a direct
    call, fastmcp's own (anyio's ``to_thread``) otherwise."""
    tool = _DIRECT_TOOL.get()
    if tool is None:
        return await _FASTMCP_HOP(fn, *args, **kwargs)
    return await tool_threads.run_sync(functools.partial(fn, **kwargs) if kwargs else fn, *args, key=id(tool))


def _install_thread_hop() -> bool:
    if not (_ENABLED and tool_threads.AVAILABLE):
        return False
    if not all(module.call_sync_fn_in_threadpool in (_FASTMCP_HOP, _tool_body_in_thread) for module in _HOP_USERS):
        return False
    for module in _HOP_USERS:
        module.call_sync_fn_in_threadpool = _tool_body_in_thread
    return True


_THREAD_HOP = _install_thread_hop()


def _passes_through(middleware: Any) -> bool:
    """True when ``middleware`` hands a ``tools/call`` on unchanged: the base class's hooks only
    (checked on every call, so a hook patched in later counts, on the class or the instance)."""
    cls = type(middleware)
    if not isinstance(middleware, Middleware) or isinstance(middleware, ToolInjectionMiddleware):
        return False
    if not _HOOKS.isdisjoint(getattr(middleware, "__dict__", ())):
        return False
    return all(getattr(cls, hook) is getattr(Middleware, hook) for hook in _HOOKS)


def _unpatched(server: Any) -> bool:
    """True when ``call_tool`` and the lookup it makes are fastmcp's own (not wrapped since import)."""
    if not _FULL_PATH.isdisjoint(server.__dict__):
        return False
    return all(getattr(FastMCP, name) is fn for name, fn in _ORIGINALS.items())


def direct_tool(server: Any, name: str) -> Any:
    """The tool ``name`` when a call to it may skip ``call_tool``'s outer layers, else ``None``."""
    if not _ENABLED or type(server) is not FastMCP or not _unpatched(server):
        return None
    local = server._local_provider
    providers = server.providers
    if type(local) is not LocalProvider or len(providers) != 1 or providers[0] is not local:
        return None
    if server._transforms or local._transforms or not all(_passes_through(m) for m in server.middleware):
        return None
    if _hashed_lookup.get() is not None or request_ctx.get(None) is not None:
        return None
    found = None
    for component in local._components.values():
        if isinstance(component, Tool) and component.name == name:
            if found is not None:  # several versions: the full path picks and falls back among them
                return None
            found = component
    if type(found) is not FunctionTool or found.auth is not None or not is_enabled(found) or _is_backend_tool(found):
        return None
    return found


async def call_tool(server: Any, name: str, arguments: dict[str, Any]) -> Any:
    """``server.call_tool(name, arguments)``: the same ``ToolResult`` or exception, faster when it can."""
    tool = direct_tool(server, name)
    if tool is None:
        return await server.call_tool(name, arguments)
    return await run_tool(server, tool, name, arguments)


async def run_tool(server: Any, tool: Any, name: str, arguments: dict[str, Any]) -> Any:
    """The direct call of ``tool``, which :func:`direct_tool` just returned for ``name``."""
    async with Context(fastmcp=server):
        with server_span(f"tools/call {name}", "tools/call", server.name, "tool", name, tool_name=name) as span:
            span.set_attributes(tool.get_span_attributes())
            token = _DIRECT_TOOL.set(tool if tool.timeout is None else None)
            try:
                return await tool._run(arguments or {}, task_meta=None)
            except ValidationError as e:
                cause = e.__cause__
                detail = cause.errors(include_url=False) if isinstance(cause, PydanticValidationError) else str(e)
                fastmcp_logger.warning("Invalid arguments for tool %r: %s", name, detail)
                raise
            except FastMCPError as e:
                fastmcp_logger.log(e.log_level, f"Error calling tool {name!r}", exc_info=False)
                raise
            except PydanticValidationError as e:
                fastmcp_logger.warning("Invalid arguments for tool %r: %s", name, e.errors(include_url=False))
                raise
            except Exception as e:
                fastmcp_logger.exception(f"Error calling tool {name!r}")
                if isinstance(e, httpx.HTTPStatusError) and e.response.status_code == 429:
                    raise ToolError("Rate limited by upstream API, please retry later") from e
                if isinstance(e, httpx.TimeoutException):
                    raise ToolError("Upstream request timed out, please retry") from e
                if server._mask_error_details:
                    raise ToolError(f"Error calling tool {name!r}") from e
                raise ToolError(f"Error calling tool {name!r}: {e}") from e
            finally:
                _DIRECT_TOOL.reset(token)
