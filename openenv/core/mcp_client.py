"""``MCPToolClient``: list and call the tools of an MCP environment (published path ``openenv.core.mcp_client``).

Usage::

    async with MCPToolClient(base_url="http://127.0.0.1:8000") as env:
        tools = await env.list_tools()
        result = await env.call_tool("echo_message", message="Hello!")   # the tool's value
        await env.reset()                                                  # reset/step/state too

    with MCPToolClient(base_url=url).sync() as env:
        env.call_tool("add", a=1, b=2)

Connecting opens a session with ``openenv/session/create`` on ``POST /mcp`` and joins it with
``/ws?session_id=``, so tool calls and reset/step/state share one server-side environment.
Tool calls travel as WebSocket ``mcp`` frames on that socket (``transport="http"`` sends them as
``POST /mcp`` with the session id instead, as the published client does). A failed call raises
:class:`~openenv.core.errors.ToolCallError` (a ``RuntimeError``, as published).
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
)
from openenv.core.env_server.types import Observation, State
from openenv.core.errors import ConnectionLostError, ProtocolError, SessionNotFoundError, ToolCallError
from openenv.core.sync_client import SyncEnvClient
from openenv.core.wire import dumps, loads, to_jsonable

__all__ = ["MCPClientBase", "MCPToolClient", "SyncMCPToolClient"]


def _http_base(base_url: str) -> str:
    url = base_url.rstrip("/")
    if url.startswith("wss://"):
        url = "https://" + url[len("wss://") :]
    elif url.startswith("ws://"):
        url = "http://" + url[len("ws://") :]
    elif not url.startswith(("http://", "https://")):
        url = "http://" + url
    return url[: -len("/ws")] if url.endswith("/ws") else url


def _tool(payload: dict[str, Any]) -> Tool:
    return Tool(
        name=payload.get("name", ""),
        description=payload.get("description") or "",
        input_schema=payload.get("input_schema", payload.get("inputSchema")) or {},
    )


class MCPClientBase(EnvClient[Any, Observation, State]):
    """An ``EnvClient`` joined to an MCP session; adds :meth:`list_tools`.

    Args:
        base_url: the server's HTTP URL.
        transport: ``"ws"`` (default: ``mcp`` frames on the session's socket) or ``"http"``
            (``POST /mcp`` with the session id).
        mode: only ``"production"`` (the published default) is accepted.
        headers: extra HTTP headers for ``POST /mcp``.
        Other arguments are those of :class:`EnvClient`.
    """

    def __init__(
        self,
        base_url: str,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 60.0,
        max_message_size_mb: float = 100.0,
        provider: Any = None,
        *,
        transport: Literal["ws", "http"] = "ws",
        mode: str | None = None,
        headers: dict[str, str] | None = None,
        **client_options: Any,
    ) -> None:
        if mode is not None and mode.lower() != "production":
            raise ValueError(f"MCPToolClient only supports 'production' mode, got {mode!r}; use GenericEnvClient")
        if transport not in ("ws", "http"):
            raise ValueError(f"transport must be 'ws' or 'http', got {transport!r}")
        super().__init__(base_url, connect_timeout_s, message_timeout_s, max_message_size_mb, provider, **client_options)
        self._http_url = _http_base(base_url)
        self._bare_ws_url = self._url
        self._transport = transport
        self._headers = dict(headers or {})
        self._http: Any = None
        self._rpc_ids = itertools.count(1)
        self._tools_cache: list[Tool] | None = None
        self.session_id: str | None = None

    # -- connection ------------------------------------------------------------------------

    async def connect(self) -> MCPClientBase:
        """Open an MCP session (``openenv/session/create``) and join it over ``/ws?session_id=``."""
        if self.session_id is None and self.client_state.value == "unopened":
            reply = await self._post({"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 0})
            if "error" in reply:
                raise ConnectionLostError(f"Failed to create MCP session: {reply['error'].get('message')}")
            session_id = (reply.get("result") or {}).get("session_id")
            if not session_id:
                raise ConnectionLostError("Failed to create MCP session: the server sent no session_id")
            self.session_id = session_id
            self._url = f"{self._bare_ws_url}?session_id={session_id}"
        await super().connect()
        return self

    async def close(self) -> None:
        """Leave the socket, close the MCP session, then release the HTTP client."""
        try:
            await super().close()
        finally:
            session_id, self.session_id = self.session_id, None
            try:
                if session_id is not None:
                    try:
                        await self._post(
                            {"jsonrpc": "2.0", "method": "openenv/session/close", "params": {"session_id": session_id}, "id": 0}
                        )
                    except ConnectionLostError:
                        pass  # the server is gone: nothing left to close
            finally:
                http, self._http = self._http, None
                if http is not None:
                    await http.aclose()

    def sync(self) -> SyncMCPToolClient:
        """A blocking wrapper (``list_tools``/``call_tool`` too)."""
        return SyncMCPToolClient(self)

    # -- JSON-RPC --------------------------------------------------------------------------

    async def _post(self, request: dict[str, Any]) -> dict[str, Any]:
        import httpx

        if self._http is None:
            self._http = httpx.AsyncClient(headers=self._headers, timeout=self._message_timeout)
        try:
            response = await self._http.post(
                self._http_url + "/mcp", content=dumps(request), headers={"content-type": "application/json"}
            )
        except httpx.HTTPError as exc:
            raise ConnectionLostError(f"Could not reach {self._http_url}/mcp: {exc}") from exc
        try:
            data = loads(response.content)
        except ProtocolError:
            raise ConnectionLostError(f"{self._http_url}/mcp answered HTTP {response.status_code} without JSON") from None
        if not isinstance(data, dict):
            raise ConnectionLostError(f"{self._http_url}/mcp answered with a non-object")
        return data

    async def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one JSON-RPC request on this session; returns the whole response object."""
        if self.client_state.value == "unopened":
            await self.connect()
        request: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": dict(params or {}), "id": next(self._rpc_ids)}
        if self._transport == "http":
            request["params"]["session_id"] = self.session_id
            reply = await self._post(request)
        else:
            frame = await self._request({"type": "mcp", "data": request})
            reply = frame.get("data") or {}
        error = reply.get("error")
        if isinstance(error, dict) and (error.get("data") or {}).get("code") == "SESSION_ERROR":
            raise SessionNotFoundError(str(error.get("message")))
        return reply

    async def list_tools(self, use_cache: bool = True) -> list[Tool]:
        """The environment's tools (``name``, ``description``, ``input_schema``); cached after the first call."""
        if use_cache and self._tools_cache is not None:
            return self._tools_cache
        reply = await self.rpc("tools/list")
        if "error" in reply:
            raise ToolCallError(f"list_tools failed: {reply['error'].get('message')}", **_rpc_details(reply["error"]))
        self._tools_cache = [_tool(t) for t in (reply.get("result") or {}).get("tools", [])]
        return self._tools_cache

    # -- EnvClient hooks (reset/step/state with MCP actions) ------------------------------

    def _step_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, ListToolsAction):
            return {"type": "list_tools"}
        if isinstance(action, CallToolAction):
            return {"type": "call_tool", "tool_name": action.tool_name, "arguments": action.arguments}
        data = to_jsonable(action)
        if not isinstance(data, dict):
            raise TypeError("MCP client actions must be JSON objects (models or dicts)")
        return data

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Observation]:
        obs = dict(payload.get("observation") or {})
        metadata = payload.get("metadata") or obs.pop("metadata", None) or {}
        obs.pop("metadata", None)
        common = {"done": bool(payload.get("done", False)), "reward": payload.get("reward"), "metadata": metadata}
        if "tools" in obs:
            observation: Observation = ListToolsObservation(tools=[_tool(t) for t in obs["tools"]], **common)
        elif "tool_name" in obs:
            error = obs.get("error")
            observation = CallToolObservation(
                tool_name=obs["tool_name"],
                result=obs.get("result"),
                error=ToolError(**error) if isinstance(error, dict) else None,
                **common,
            )
        else:
            observation = _GenericObservation(**common, **{k: v for k, v in obs.items() if k not in common})
        return StepResult(observation=observation, reward=payload.get("reward"), done=common["done"], metadata=metadata)

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload) if isinstance(payload, dict) else State()


class _GenericObservation(Observation):
    model_config = {"extra": "allow"}


def _rpc_details(error: dict[str, Any]) -> dict[str, Any]:
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    return {"rpc_code": error.get("code"), **{k: v for k, v in data.items() if k != "code"}}


class MCPToolClient(MCPClientBase):
    """Tool-calling client: :meth:`call_tool` returns the tool's value."""

    async def call_tool(self, name: str, **arguments: Any) -> Any:
        """Call tool ``name`` with keyword ``arguments``; returns its value (FastMCP's ``data``).

        Raises:
            ToolCallError: unknown tool, invalid arguments, the tool raised or timed out
                (``error_type`` says which; the message names the field for bad arguments).
        """
        reply = await self.rpc("tools/call", {"name": name, "arguments": arguments})
        if "error" in reply:
            error = reply["error"] or {}
            raise ToolCallError(f"Tool '{name}' failed: {error.get('message')}", tool_name=name, **_rpc_details(error))
        result = reply.get("result")
        if isinstance(result, dict) and result.get("is_error"):
            raise ToolCallError(f"Tool '{name}' returned an error", tool_name=name, error_type="execution_error")
        if isinstance(result, dict) and "data" in result:
            return result["data"]
        return result

    async def get_tool(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None``."""
        return next((t for t in await self.list_tools() if t.name == name), None)

    async def has_tool(self, name: str) -> bool:
        return await self.get_tool(name) is not None


class SyncMCPToolClient(SyncEnvClient):
    """Blocking face of an MCP client: ``list_tools``, ``call_tool`` plus reset/step/state."""

    def list_tools(self, use_cache: bool = True) -> list[Tool]:
        return self._run(self._client.list_tools(use_cache=use_cache))

    def call_tool(self, name: str, **arguments: Any) -> Any:
        return self._run(self._client.call_tool(name, **arguments))

    def get_tool(self, name: str) -> Tool | None:
        return self._run(self._client.get_tool(name))

    def has_tool(self, name: str) -> bool:
        return self._run(self._client.has_tool(name))

    def __enter__(self) -> SyncMCPToolClient:
        super().__enter__()
        return self
