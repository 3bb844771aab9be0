"""``POST /mcp``: MCP over JSON-RPC 2.0 (RFC 003), and the same handler for WebSocket ``mcp`` frames
and the WebSocket ``/mcp`` (one environment per connection: ``mcp_ws``).

Methods: ``tools/list``, ``tools/call`` (``{"name", "arguments"}``), ``openenv/session/create``
(returns a ``session_id``) and ``openenv/session/close``. A ``session_id`` param routes a call to
that session; without one, a throwaway environment answers (the published behaviour). Every
answer is HTTP 200 with a JSON-RPC body, errors included; a non-MCP environment answers
``-32603 "Environment does not support MCP"``.

This module imports no ``fastmcp``: an environment is MCP when it has ``mcp_tools``/``mcp_call``
(``MCPEnvironment``) or when its action type is one of the MCP actions (answered through ``step``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from starlette._utils import get_route_path
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from openenv.core._deadline import with_deadline
from openenv.core.env_server.serialization import safe_error_text
from openenv.core.errors import OpenEnvError, ProtocolError, SessionNotFoundError
from openenv.core.wire import dumps, loads

if TYPE_CHECKING:
    from openenv.core.env_server.http_server import HTTPEnvServer
    from openenv.core.env_server.sessions import Session

__all__ = ["McpFastPath", "McpPost", "McpRpc", "build_mcp_router", "error_response", "install", "is_mcp_env", "takes_mcp_actions"]

log = logging.getLogger("openenv.server")

NOT_MCP = "Environment does not support MCP"
_MCP_TYPES = "openenv.core.env_server.mcp_types"


class JsonRpcErrorCode:
    """The JSON-RPC codes used here (``mcp_types.JsonRpcErrorCode`` has the same values; not imported
    so a plain environment's start never builds the MCP models)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_ERROR = -32000


class McpMethod:
    TOOLS_LIST = "tools/list"
    TOOLS_CALL = "tools/call"
    SESSION_CREATE = "openenv/session/create"
    SESSION_CLOSE = "openenv/session/close"


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def takes_mcp_actions(action_cls: Any) -> bool:
    """True when an environment's action type is an MCP action (``/mcp`` then answers through ``step``,
    as 0.10 does for such "MCP-style" environments)."""
    return isinstance(action_cls, type) and any(c.__module__ == _MCP_TYPES for c in action_cls.__mro__)


def is_mcp_env(env: Any) -> bool:
    """True for an ``MCPEnvironment`` (tools served in process)."""
    return callable(getattr(env, "mcp_call", None)) and callable(getattr(env, "mcp_tools", None))


def error_response(code: int, message: str, request_id: Any = None, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC 2.0 error answer."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": int(code), "message": message, "data": data}}



def _id_of(request: Any) -> Any:
    rid = request.get("id") if isinstance(request, dict) else None
    return rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None


def _failure_error(failure: Any) -> RpcError:
    """A tool failure (``McpToolFailure``) as its JSON-RPC error."""
    kind = failure.error_type.value
    data = {"error_type": kind, **failure.details}
    if kind in ("tool_not_found", "invalid_args"):
        return RpcError(JsonRpcErrorCode.INVALID_PARAMS, failure.message, data)
    if kind == "timeout":
        return RpcError(JsonRpcErrorCode.SERVER_ERROR, failure.message, data)
    return RpcError(JsonRpcErrorCode.INTERNAL_ERROR, failure.message, data)


class McpRpc:
    """Answers JSON-RPC requests for one ``HTTPEnvServer`` (HTTP ``/mcp`` and WS ``mcp`` frames)."""

    def __init__(self, server: HTTPEnvServer) -> None:
        self.server = server
        self._step_mcp = takes_mcp_actions(server.action_cls)

    # -- entry points ----------------------------------------------------------------------

    async def handle_body(self, body: bytes) -> dict[str, Any]:
        """Parse one HTTP body and answer it."""
        try:
            request = loads(body) if body.strip() else None
        except ProtocolError:
            return error_response(JsonRpcErrorCode.PARSE_ERROR, "Parse error: the body is not valid JSON")
        return await self.handle(request)

    async def handle(self, request: Any, *, session: Session | None = None) -> dict[str, Any]:
        """Answer one decoded JSON-RPC request; ``session`` is the caller's own (a WebSocket's)."""
        request_id = _id_of(request)
        try:
            method, params = self._validate(request)
            result = await self._dispatch(method, params, session)
        except RpcError as err:
            return error_response(err.code, err.message, request_id, err.data)
        except OpenEnvError as err:
            return error_response(JsonRpcErrorCode.SERVER_ERROR, err.message, request_id, err.to_wire())
        except Exception as exc:  # never a 5xx, never a traceback
            log.exception("MCP request failed")
            return error_response(JsonRpcErrorCode.INTERNAL_ERROR, safe_error_text(exc), request_id)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    # -- validation and dispatch -----------------------------------------------------------

    @staticmethod
    def _validate(request: Any) -> tuple[str, dict[str, Any]]:
        if not isinstance(request, dict):
            raise RpcError(JsonRpcErrorCode.INVALID_REQUEST, "Invalid Request: expected a JSON-RPC request object")
        problems = []
        if request.get("jsonrpc") != "2.0":
            problems.append("'jsonrpc' must be \"2.0\"")
        method = request.get("method")
        if not isinstance(method, str) or not method:
            problems.append("'method' must be a non-empty string")
        params = request.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            problems.append("'params' must be an object")
        rid = request.get("id")
        if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
            problems.append("'id' must be a string, an integer or null")
        extra = sorted(set(request) - {"jsonrpc", "method", "params", "id"})
        if extra:
            problems.append("unknown member(s) " + ", ".join(map(repr, extra)))
        if problems:
            raise RpcError(JsonRpcErrorCode.INVALID_REQUEST, "Invalid Request: " + "; ".join(problems))
        return method, params

    async def _dispatch(self, method: str, params: dict[str, Any], own: Session | None) -> Any:
        if method == McpMethod.SESSION_CREATE:
            if own is not None:
                return {"session_id": own.id}
            session = await self.server.sessions.create("mcp")
            return {"session_id": session.id}
        if method == McpMethod.SESSION_CLOSE:
            return await self._close_session(params, own)
        if method == McpMethod.TOOLS_LIST:
            session = self._target(params, own)
            if session is not None:
                return await self._list_tools(session.env, session)
            async with self._ephemeral() as (env, session):
                return await self._list_tools(env, session)
        if method == McpMethod.TOOLS_CALL:
            name = params.get("name")
            if not isinstance(name, str) or not name:
                raise RpcError(JsonRpcErrorCode.INVALID_PARAMS, "Missing 'name' in params (the tool to call)")
            arguments = params.get("arguments")
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, dict):
                raise RpcError(
                    JsonRpcErrorCode.INVALID_PARAMS,
                    "Invalid params: 'arguments' must be an object",
                    {"error_type": "invalid_args", "errors": [{"loc": ["arguments"], "msg": "Input should be an object"}]},
                )
            session = self._target(params, own)
            if session is not None:
                return await self._call_tool(session.env, session, name, arguments)
            async with self._ephemeral() as (env, session):
                return await self._call_tool(env, session, name, arguments)
        raise RpcError(JsonRpcErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _close_session(self, params: dict[str, Any], own: Session | None) -> dict[str, Any]:
        target = params.get("session_id")
        if not isinstance(target, str) or not target:
            raise RpcError(JsonRpcErrorCode.INVALID_PARAMS, "Invalid params - 'session_id' is required")
        if own is not None and own.id == target:
            raise RpcError(JsonRpcErrorCode.INVALID_REQUEST, "Cannot close active WebSocket-managed session via MCP method")
        session = self._session(target)
        if session.attached:
            session.close_when_detached = True
            return {"session_id": target, "closed": False, "closing": True}
        await self.server.sessions.close(target)
        return {"session_id": target, "closed": True}

    def _session(self, session_id: str) -> Session:
        try:
            return self.server.sessions.get(session_id)
        except SessionNotFoundError:
            raise RpcError(
                JsonRpcErrorCode.INVALID_PARAMS, f"Unknown session_id: {session_id}", {"code": "SESSION_ERROR"}
            ) from None

    def _target(self, params: dict[str, Any], own: Session | None) -> Session | None:
        """The caller's own session, or the one named by ``session_id``; ``None``: a throwaway one."""
        if own is not None:
            return own
        requested = params.get("session_id")
        if requested is None:
            return None
        if not isinstance(requested, str) or not requested:
            raise RpcError(JsonRpcErrorCode.INVALID_PARAMS, "Invalid params: 'session_id' must be a string")
        return self._session(requested)

    @contextlib.asynccontextmanager
    async def _ephemeral(self) -> AsyncIterator[tuple[Any, Session | None]]:
        async with self.server.ephemeral_session() as session:
            yield session.env, (session if session.id == "instance" else None)

    # -- the two MCP methods ---------------------------------------------------------------

    async def _list_tools(self, env: Any, session: Session | None) -> dict[str, Any]:
        if is_mcp_env(env):
            return {"tools": await env.mcp_tools()}
        if not self._step_mcp:
            raise RpcError(JsonRpcErrorCode.INTERNAL_ERROR, NOT_MCP)
        obs = await self._step(env, session, {"type": "list_tools"}, "tools/list")
        tools = obs.get("observation", {}).get("tools")
        if not isinstance(tools, list):
            raise RpcError(JsonRpcErrorCode.INTERNAL_ERROR, "MCP-style tools/list step returned no tools")
        return {"tools": [_as_mcp_tool(t) for t in tools]}

    async def _call_tool(self, env: Any, session: Session | None, name: str, arguments: dict[str, Any]) -> Any:
        if is_mcp_env(env):
            from openenv.core.env_server.mcp_environment import McpToolFailure

            timeout_s = self.server.dispatcher.default_timeout_s
            lock = session.lock if session is not None else contextlib.nullcontext()
            async with lock:
                if session is not None:
                    session.busy = True
                try:
                    return await env.mcp_call(name, arguments, timeout_s)
                except McpToolFailure as failure:
                    raise _failure_error(failure) from None
                finally:
                    if session is not None:
                        session.busy = False
                        session.touch()
        if not self._step_mcp:
            raise RpcError(JsonRpcErrorCode.INTERNAL_ERROR, NOT_MCP)
        obs = await self._step(env, session, {"type": "call_tool", "tool_name": name, "arguments": arguments}, "tools/call")
        return obs.get("observation", obs)

    async def _step(self, env: Any, session: Session | None, action: dict[str, Any], method: str) -> dict[str, Any]:
        """An MCP-style environment's step; its observation must be the MCP one (as 0.10 checks)."""
        from openenv.core.env_server.dispatch import UnexpectedObservation
        from openenv.core.env_server.mcp_types import CallToolObservation, ListToolsObservation
        from openenv.core.env_server.sessions import Session as _Session

        target = session or _Session(id="mcp-ephemeral", kind="mcp", env=env, owned=False)
        expect = ListToolsObservation if method == "tools/list" else CallToolObservation
        try:
            return await self.server.dispatcher.step(target, action, require_reset=False, expect=expect)
        except UnexpectedObservation as exc:
            raise RpcError(JsonRpcErrorCode.INTERNAL_ERROR, f"MCP-style {method} step {exc.message}") from None


def _as_mcp_tool(tool: Any) -> Any:
    if isinstance(tool, dict) and "input_schema" in tool and "inputSchema" not in tool:
        return {"name": tool.get("name"), "description": tool.get("description", ""), "inputSchema": tool["input_schema"]}
    return tool


_BODY_WAIT_S = 30.0
_JSON_HEADERS = [(b"content-type", b"application/json")]


async def _read_body(receive: Any, limit: int) -> bytes | None:
    """The request body, or ``None`` once it passes ``limit`` bytes (the rest is not read)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionResetError("the client left before its body arrived")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


class McpPost:
    """ASGI app answering one ``POST /mcp``: always HTTP 200 with a JSON-RPC body (the route's
    endpoint, and what :class:`McpFastPath` calls)."""

    def __init__(self, rpc: McpRpc, max_bytes: int) -> None:
        self.rpc, self.max_bytes = rpc, max_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            body = await with_deadline(_read_body(receive, self.max_bytes), _BODY_WAIT_S)
        except TimeoutError:
            reply = error_response(JsonRpcErrorCode.PARSE_ERROR, "Parse error: the body was not received in time")
        except ConnectionResetError:
            return
        else:
            if body is None:
                reply = error_response(JsonRpcErrorCode.INVALID_REQUEST, f"Invalid Request: body over {self.max_bytes} bytes")
            else:
                reply = await self.rpc.handle_body(body)
        payload = dumps(reply)
        headers = [*_JSON_HEADERS, (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


class McpFastPath:
    """ASGI middleware answering ``POST /mcp`` before the app's router and exception layers.

    The answer is always HTTP 200 with a JSON-RPC body, so those layers have nothing to do for
    it; skipping them (and the route matching) is most of the HTTP cost of a tool call. Every
    other request, and any middleware the author adds later (outside this one), is untouched.
    """

    def __init__(self, app: Any, post: McpPost) -> None:
        self.app, self.post = app, post

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and get_route_path(scope) == "/mcp":
            await self.post(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def build_mcp_router(server: HTTPEnvServer) -> APIRouter:
    """The ``POST /mcp`` and WebSocket ``/mcp`` routes (also answers WebSocket ``mcp`` frames on
    ``/ws`` through ``server.mcp``). ``install`` also puts :class:`McpFastPath` in front of the
    app, which answers ``POST /mcp`` with the same :class:`McpPost` before the router."""
    rpc = McpRpc(server)
    server.mcp = rpc  # type: ignore[attr-defined]
    server.mcp_post = McpPost(rpc, server.max_message_bytes)  # type: ignore[attr-defined]
    router = APIRouter()

    async def mcp_websocket(ws: WebSocket) -> None:
        from openenv.core.env_server.mcp_ws import serve_mcp_websocket

        await serve_mcp_websocket(ws, server)

    # Plain Starlette routes: FastAPI's dependency solving would cost more than the call itself.
    router.routes.append(Route("/mcp", server.mcp_post, methods=["POST"], name="mcp"))
    router.routes.append(WebSocketRoute("/mcp", mcp_websocket, name="mcp_ws"))
    return router


_MCP_OPENAPI = {
    "post": {
        "tags": ["MCP"],
        "summary": "MCP JSON-RPC endpoint",
        "description": "JSON-RPC 2.0: tools/list, tools/call, openenv/session/create, openenv/session/close.",
        "operationId": "mcp_endpoint_mcp_post",
        "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True},
        "responses": {"200": {"description": "A JSON-RPC 2.0 response (errors too)",
                              "content": {"application/json": {"schema": {"type": "object"}}}}},
    }
}


def _document_mcp(app: Any) -> None:
    """List ``POST /mcp`` in ``/openapi.json`` as 0.10 does (its route is a plain Starlette one)."""
    build = getattr(app, "openapi", None)
    if not callable(build) or getattr(build, "__openenv_mcp__", False):
        return

    def openapi() -> dict[str, Any]:
        schema = build()
        schema.setdefault("paths", {}).setdefault("/mcp", _MCP_OPENAPI)
        return schema

    openapi.__openenv_mcp__ = True  # type: ignore[attr-defined]
    app.openapi = openapi


def install(app: Any, server: HTTPEnvServer, mode: Any = None) -> None:
    """The ``mcp_hook`` entry point: add ``POST /mcp`` (in every mode) and the WS ``mcp`` handler."""
    from openenv.core.env_server._routing import add_routes

    add_routes(app, build_mcp_router(server))
    _document_mcp(app)
    try:
        app.add_middleware(McpFastPath, post=server.mcp_post)
    except RuntimeError:  # the app already started (routes added late): the route answers alone
        log.debug("MCP fast path not installed: the app has started")
