"""The loopback MCP bridge: an environment's tools served over HTTP to the harness it runs (RFC 005).

The bridge serves ONLY the environment's FastMCP tool server (streamable HTTP on ``127.0.0.1``,
an ephemeral port, a daemon thread with its own loop). The orchestration API (``reset``, ``step``,
``state``) lives on another server, so the harness cannot reach it: the boundary is structural.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any

from openenv.core.harness.adapter import HarnessError

__all__ = ["HarnessMCPBridge", "build_bridge_server"]


async def _tools_by_name(mcp_server: Any) -> dict[str, Any]:
    """``{name: tool}`` of a FastMCP server (2.x ``get_tools`` or 3.x ``list_tools``)."""
    get_tools = getattr(mcp_server, "get_tools", None)
    if get_tools is not None:
        found = await get_tools()
        if isinstance(found, dict):
            return found
    list_tools = getattr(mcp_server, "list_tools", None)
    if list_tools is not None:
        return {tool.name: tool for tool in await list_tools()}
    return {}


async def build_bridge_server(mcp_server: Any, renames: dict[str, str]) -> Any:
    """The server the bridge should serve: the env's tools under the names injected into the harness.

    Conflict resolution may rename a tool (``read_file`` -> ``env_read_file``); the harness then
    calls the new name, so the bridge must answer to it.

    Args:
        mcp_server: the environment's ``FastMCP`` server.
        renames: ``{injected name: source name}``; empty means nothing renamed.

    Returns:
        ``mcp_server`` itself without renames, else a proxy view of it exposing the renamed tools.

    Raises:
        HarnessError: a source name is not a tool of ``mcp_server``.
    """
    if not renames:
        return mcp_server
    from fastmcp import Client
    from fastmcp.server.providers.proxy import FastMCPProxy, StatefulProxyClient
    from fastmcp.server.transforms import ToolTransform
    from fastmcp.tools.tool_transform import ToolTransformConfig

    known = await _tools_by_name(mcp_server)
    unknown = sorted(set(renames.values()) - set(known))
    if unknown:
        raise HarnessError("Cannot rename tools that the MCP server does not expose: " + ", ".join(unknown))

    @contextlib.asynccontextmanager
    async def keep_source_open(_server: Any):
        # One in-memory session on the source for the bridge's whole life, so the source's
        # resources survive the harness reconnecting (as when the source is served directly).
        async with Client(mcp_server):
            yield {}

    proxied = StatefulProxyClient(mcp_server)  # one source session per harness connection
    view = FastMCPProxy(
        name=f"{getattr(mcp_server, 'name', 'openenv')}-harness-view",
        client_factory=proxied.new_stateful,
        lifespan=keep_source_open,
    )
    view.add_transform(ToolTransform({src: ToolTransformConfig(name=new) for new, src in renames.items()}))
    return view


def _forget_sse_exit_event() -> None:
    """Drop sse-starlette's process-wide exit event before a bridge's loop starts.

    sse-starlette creates that ``anyio.Event`` on the first SSE stream and keeps it for the
    process, bound to that stream's loop; every bridge runs its own loop, so without this the
    second bridge of a process (the next episode's) fails its MCP streams with "bound to a
    different event loop" (0.10 has this bug). A bridge's streams get a fresh event on first use.
    """
    try:
        from sse_starlette.sse import AppStatus
    except ImportError:  # pragma: no cover - fastmcp's HTTP transport brings it
        return
    AppStatus.should_exit_event = None


class HarnessMCPBridge:
    """Serve a FastMCP server at ``http://127.0.0.1:<port>/mcp`` for a harness process.

    Args:
        mcp_server: the ``FastMCP`` server (usually from :func:`build_bridge_server`).
        host: interface to bind; keep it loopback.

    Example::

        bridge = HarnessMCPBridge(env.mcp_server)
        url = bridge.start()        # hand it to adapter.inject_tools(tools, url)
        bridge.stop()
    """

    def __init__(self, mcp_server: Any, host: str = "127.0.0.1"):
        self._mcp_server = mcp_server
        self._host = host
        self._url: str | None = None
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self._failure: BaseException | None = None

    @property
    def url(self) -> str | None:
        """The MCP endpoint while serving, else ``None``."""
        return self._url

    def start(self, timeout_s: float = 10.0) -> str:
        """Start serving (idempotent) and return the endpoint URL.

        Raises:
            HarnessError: the server failed or did not come up within ``timeout_s``, or a previous
                :meth:`stop` has not finished.
        """
        if self._thread is not None and self._thread.is_alive():
            if self._server.should_exit:
                raise HarnessError("MCP bridge is still stopping")
            return self._url  # type: ignore[return-value]
        import uvicorn

        from openenv.core.origin_policy import OriginGuard

        app = OriginGuard(self._mcp_server.http_app())  # no web page may call the tools (docs/security.md)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, 0))
        port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self._server = server
        self._failure = None

        def serve() -> None:
            try:
                _forget_sse_exit_event()
                server.run(sockets=[sock])
            except BaseException as exc:  # reported by start()
                self._failure = exc
            finally:
                with contextlib.suppress(OSError):
                    sock.close()

        thread = threading.Thread(target=serve, name="openenv-harness-bridge", daemon=True)
        self._thread = thread
        thread.start()
        give_up = time.monotonic() + timeout_s
        while not server.started:
            if self._failure is not None or not thread.is_alive():
                self._forget()
                raise HarnessError(f"MCP bridge failed to start: {self._failure}")
            if time.monotonic() > give_up:
                self.stop()
                raise HarnessError(f"MCP bridge did not start within {timeout_s}s")
            time.sleep(0.01)
        self._url = f"http://{self._host}:{port}/mcp"
        return self._url

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop serving (idempotent).

        Raises:
            HarnessError: the server thread did not end within ``timeout_s``; the bridge stays
                tracked so ``stop`` can be retried (and ``start`` refuses until then).
        """
        server, thread = self._server, self._thread
        budget = max(timeout_s, 0.0)
        give_up = time.monotonic() + budget
        if server is not None:
            server.config.timeout_graceful_shutdown = budget / 4  # cut open HTTP streams early
            server.should_exit = True
        if thread is not None and thread.is_alive():
            thread.join(timeout=budget / 2)
            if thread.is_alive() and server is not None:
                server.force_exit = True
                thread.join(timeout=max(0.0, give_up - time.monotonic()))
            if thread.is_alive():
                raise HarnessError(f"MCP bridge did not stop within {timeout_s}s")
        self._forget()

    def _forget(self) -> None:
        self._url = None
        self._thread = None
        self._server = None
