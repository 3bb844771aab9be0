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
from openenv.core.env_client import ClientState, EnvClient
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
)
from openenv.core.env_server.types import Observation, State
from openenv.core.errors import (
    ConnectionLostError,
    EpisodeLostError,
    ProtocolError,
    SessionNotFoundError,
    ToolCallError,
)
from openenv.core.sync_client import SyncEnvClient
from openenv.core.wire import dumps, loads, to_jsonable

__all__ = ["GenericMCPObservation", "MCPClientBase", "MCPToolClient", "SyncMCPToolClient"]


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
        Other arguments are those of :class:`EnvClient` (``headers`` also go with ``POST /mcp``).
    """

    def __init__(
        self,
        base_url: str | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 60.0,
        max_message_size_mb: float = 100.0,
        provider: Any = None,
        *,
        transport: Literal["ws", "http"] = "ws",
        mode: str | None = None,
        **client_options: Any,
    ) -> None:
        mode = "production" if mode is None else mode  # as 0.10: OPENENV_CLIENT_MODE is not read here
        if str(mode).lower() != "production":
            raise ValueError(
                f"MCPToolClient only supports 'production' mode, got {mode!r}; use GenericEnvClient for simulation mode"
            )
        if transport not in ("ws", "http"):
            raise ValueError(f"transport must be 'ws' or 'http', got {transport!r}")
        super().__init__(
            base_url, connect_timeout_s, message_timeout_s, max_message_size_mb, provider, mode=mode, **client_options
        )
        #: 0.10's flag: set it to ``False`` and ``list_tools``/``call_tool`` go through ``step``
        #: (``ListToolsAction``/``CallToolAction``: the server counts them as steps), as on 0.10
        self.use_production_mode = True
        self._http_url = _http_base(base_url) if base_url is not None else None
        self._bare_ws_url = self._url
        self._transport = transport
        self._http: Any = None
        self._rpc_ids = itertools.count(1)
        self._tools_cache: list[Tool] | None = None
        self.session_id: str | None = None
        self._used = False  # a tool call or reset ran on this session: it holds state
        self._session_lost: str | None = None  # why the session was replaced (until reset)

    # -- connection ------------------------------------------------------------------------

    def _set_base_url(self, base_url: str) -> None:
        super()._set_base_url(base_url)
        self._http_url = _http_base(base_url)
        self._bare_ws_url = self._url

    async def _open_socket(self) -> None:
        """Open an MCP session (``openenv/session/create``) and join it over ``/ws?session_id=``.

        After a lost connection the same session is joined again when the server still has it
        (its environment, and so the episode, lives on). When it is gone (a server restart, the
        session reaped) a fresh one is made, and a tool call raises ``EpisodeLostError`` until
        ``reset()``: a call never runs on a fresh environment as if it were the old one.
        """
        rejoin = self.session_id is not None and self.client_state is ClientState.DISCONNECTED
        if rejoin and not await self._session_alive(self.session_id):
            self._forget_session(f"the server no longer has MCP session {self.session_id}")
            rejoin = False
        if self.session_id is None:
            reply = await self._post({"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 0})
            if "error" in reply:
                raise ConnectionLostError(f"Failed to create MCP session: {reply['error'].get('message')}")
            session_id = (reply.get("result") or {}).get("session_id")
            if not session_id:
                raise ConnectionLostError("Failed to create MCP session: the server sent no session_id")
            self.session_id = session_id
            self._url = f"{self._bare_ws_url}?session_id={session_id}"
        await super()._open_socket()
        if rejoin and self._lost is not None:  # the same environment: its episode goes on
            self._episode, self._lost = True, None

    def _forget_session(self, why: str) -> None:
        if self.session_id is None:
            return
        self.session_id = None
        self._url = self._bare_ws_url
        if self._used or self._episode or self._lost is not None:
            self._session_lost = why
        if self._ws is not None:
            self._drop("the server dropped the MCP session")

    async def _session_alive(self, session_id: str) -> bool:
        """Whether the server still has ``session_id``: from its ``GET /sessions`` (ours, no side
        effect), else by a ``tools/list`` on the session (a 0.10 server)."""
        listed = await self._listed_sessions()
        if listed is not None:
            return session_id in listed
        reply = await self._post({"jsonrpc": "2.0", "method": "tools/list", "params": {"session_id": session_id}, "id": 0})
        return _session_error(reply) is None

    async def _listed_sessions(self) -> set[str] | None:
        import httpx

        try:
            response = await self._http_client().get(self._http_url + "/sessions")
        except httpx.HTTPError as exc:
            raise ConnectionLostError(f"Could not reach {self._http_url}/sessions: {exc}") from exc
        try:
            sessions = loads(response.content).get("sessions") if response.status_code == 200 else None
        except (ProtocolError, AttributeError):
            return None
        if not isinstance(sessions, list):
            return None
        return {s.get("session_id") for s in sessions if isinstance(s, dict)}

    async def _reset_async(self, **kwargs: Any) -> StepResult[Observation]:
        result = await super()._reset_async(**kwargs)
        self._session_lost, self._used = None, True
        return result

    async def _close_async(self) -> None:
        """Leave the socket, close the MCP session, then release the HTTP client."""
        try:
            await super()._close_async()
        finally:
            try:
                await self._close_mcp_session()
            finally:
                http, self._http = self._http, None
                if http is not None:
                    await http.aclose()

    async def _close_mcp_session(self) -> None:
        session_id, self.session_id = self.session_id, None
        if session_id is None:
            return
        try:
            await self._post({"jsonrpc": "2.0", "method": "openenv/session/close", "params": {"session_id": session_id}, "id": 0})
        except ConnectionLostError:
            pass  # the server is gone: nothing left to close

    # -- JSON-RPC --------------------------------------------------------------------------

    def _production_mcp_url(self) -> str:
        """The ``POST /mcp`` URL (an http(s) URL even when ``base_url`` is ws(s)), as 0.10 names it."""
        return self._http_url + "/mcp"

    def _http_client(self) -> Any:
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(headers=self.headers, timeout=self._message_timeout)
        return self._http

    async def _post(self, request: dict[str, Any]) -> dict[str, Any]:
        import httpx

        try:
            response = await self._http_client().post(
                self._production_mcp_url(), content=dumps(request), headers={"content-type": "application/json"}
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

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one JSON-RPC request on this session; returns the whole response object (awaitable in async code)."""
        return self._dispatch(lambda: self._rpc_async(method, params))

    async def _rpc_async(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self._ws is None or self._stale(self._ws):
            await self._connect_async()
        if method == "tools/call" and self._session_lost is not None:
            raise EpisodeLostError(
                f"The MCP session was lost ({self._session_lost}) and this is a new one: "
                "call reset() before calling tools again",
                reason=self._session_lost,
            )
        request: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": dict(params or {}), "id": next(self._rpc_ids)}
        try:
            if self._transport == "http":
                request["params"]["session_id"] = self.session_id
                reply = await self._post(request)
            else:
                frame = await self._request({"type": "mcp", "data": request})
                reply = frame.get("data") or {}
            error = _session_error(reply)
            if error is not None:
                raise SessionNotFoundError(str(error.get("message")))
        except SessionNotFoundError as exc:  # the server dropped our session: the next call makes a new one
            self._forget_session(exc.message)
            raise
        if method == "tools/call":
            self._used = True
        return reply

    def list_tools(self, use_cache: bool = True) -> Any:
        """The environment's tools (``name``, ``description``, ``input_schema``); cached after the first call.

        A list in sync code; awaitable in async code (as every client call).
        """
        return self._dispatch(lambda: self._list_tools_async(use_cache))

    async def _list_tools_async(self, use_cache: bool = True) -> list[Tool]:
        if use_cache and self._tools_cache is not None:
            return self._tools_cache
        if not self.use_production_mode:  # 0.10: tools are listed with step(ListToolsAction())
            obs = (await self._step_async(ListToolsAction())).observation
            self._tools_cache = list(obs.tools) if isinstance(obs, ListToolsObservation) else []
            return self._tools_cache
        reply = await self._rpc_async("tools/list")
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
            observation = GenericMCPObservation(**common, **{k: v for k, v in obs.items() if k not in common})
        return StepResult(observation=observation, reward=payload.get("reward"), done=common["done"], metadata=metadata)

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload) if isinstance(payload, dict) else State()


class GenericMCPObservation(Observation):
    """An observation of a non-MCP action on an MCP env: its fields as sent (published name)."""

    model_config = {"extra": "allow"}


def _step_value(name: str, obs: Any) -> Any:
    """The value of a tool call made as a step (0.10's non-production path)."""
    if isinstance(obs, CallToolObservation) and obs.error is not None:
        raise ToolCallError(
            f"Tool '{name}' failed: {obs.error.message} (type: {obs.error.error_type.value})",
            tool_name=name, error_type=obs.error.error_type.value,
        )
    result = obs.result if isinstance(obs, CallToolObservation) else obs
    if hasattr(result, "data"):
        return result.data
    if isinstance(result, dict) and "data" in result:
        return result["data"]
    return result


def _session_error(reply: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON-RPC error of ``reply`` when it says the session is unknown (``SESSION_ERROR``)."""
    error = reply.get("error")
    return error if isinstance(error, dict) and (error.get("data") or {}).get("code") == "SESSION_ERROR" else None


def _rpc_details(error: dict[str, Any]) -> dict[str, Any]:
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    return {"rpc_code": error.get("code"), **{k: v for k, v in data.items() if k != "code"}}


class MCPToolClient(MCPClientBase):
    """Tool-calling client: :meth:`call_tool` returns the tool's value."""

    def call_tool(self, name: str, **arguments: Any) -> Any:
        """Call tool ``name`` with keyword ``arguments``; returns its value (FastMCP's ``data``).

        The value in sync code; awaitable in async code.

        Raises:
            ToolCallError: unknown tool, invalid arguments, the tool raised or timed out
                (``error_type`` says which; the message names the field for bad arguments).
        """
        return self._dispatch(lambda: self._call_tool_async(name, arguments))

    async def _call_tool_async(self, name: str, arguments: dict[str, Any]) -> Any:
        if not self.use_production_mode:  # 0.10: the call is a step(CallToolAction(...))
            return _step_value(name, (await self._step_async(CallToolAction(tool_name=name, arguments=arguments))).observation)
        reply = await self._rpc_async("tools/call", {"name": name, "arguments": arguments})
        if "error" in reply:
            error = reply["error"] or {}
            raise ToolCallError(f"Tool '{name}' failed: {error.get('message')}", tool_name=name, **_rpc_details(error))
        result = reply.get("result")
        if isinstance(result, dict) and result.get("is_error"):
            raise ToolCallError(f"Tool '{name}' returned an error", tool_name=name, error_type="execution_error")
        if isinstance(result, dict) and "data" in result:
            return result["data"]
        return result

    def get_tool(self, name: str) -> Any:
        """The tool called ``name``, or ``None`` (awaitable in async code)."""
        return self._dispatch(lambda: self._get_tool_async(name))

    def has_tool(self, name: str) -> Any:
        """Whether a tool called ``name`` exists (awaitable in async code)."""
        return self._dispatch(lambda: self._has_tool_async(name))

    async def _get_tool_async(self, name: str) -> Tool | None:
        return next((t for t in await self._list_tools_async() if t.name == name), None)

    async def _has_tool_async(self, name: str) -> bool:
        return await self._get_tool_async(name) is not None


class SyncMCPToolClient(SyncEnvClient):
    """Blocking face of an MCP client: ``list_tools``, ``call_tool`` plus reset/step/state."""

    def list_tools(self, use_cache: bool = True) -> list[Tool]:
        return self._run(self._client._list_tools_async(use_cache))

    def call_tool(self, name: str, **arguments: Any) -> Any:
        return self._run(self._client._call_tool_async(name, arguments))

    def get_tool(self, name: str) -> Tool | None:
        return self._run(self._client._get_tool_async(name))

    def has_tool(self, name: str) -> bool:
        return self._run(self._client._has_tool_async(name))

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._run(self._client._rpc_async(method, params))

    def __enter__(self) -> SyncMCPToolClient:
        super().__enter__()
        return self


MCPClientBase._sync_class = SyncMCPToolClient
