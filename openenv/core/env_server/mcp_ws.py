"""WebSocket ``/mcp``: JSON-RPC 2.0 requests as text frames, one environment per connection
(the published 0.10 endpoint of the same path).

Each connection opens its own session (``kind="mcp-ws"``) and every frame is a JSON-RPC request
answered by the same :class:`~openenv.core.env_server.mcp_routes.McpRpc` as ``POST /mcp``, on that
session: ``openenv/session/create`` names it, closing it by id is refused (hang up instead). Bad
frames get their JSON-RPC error and the socket stays open; a full server answers ``-32000`` with
``active_sessions``/``max_sessions`` and hangs up. The session closes with the socket.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from openenv.core.env_server.mcp_routes import JsonRpcErrorCode, error_response
from openenv.core.errors import OpenEnvError, ProtocolError, SessionNotFoundError
from openenv.core.wire import dumps, loads

if TYPE_CHECKING:
    from openenv.core.env_server.http_server import HTTPEnvServer

__all__ = ["serve_mcp_websocket"]

log = logging.getLogger("openenv.server")


async def _send(ws: WebSocket, reply: dict[str, Any]) -> None:
    await ws.send_text(dumps(reply).decode())


async def _hang_up(ws: WebSocket) -> None:
    if ws.application_state == WebSocketState.CONNECTED:
        try:
            await ws.close()
        except (RuntimeError, WebSocketDisconnect, OSError):
            log.debug("peer already gone", exc_info=True)


async def _answer(server: HTTPEnvServer, message: dict[str, Any], session: Any) -> dict[str, Any]:
    """The JSON-RPC answer to one frame (its error when the frame is too big or not JSON)."""
    text = message.get("text")
    if text is None:
        text = (message.get("bytes") or b"").decode("utf-8", "replace")
    if len(text) > server.max_message_bytes:
        return error_response(JsonRpcErrorCode.INVALID_REQUEST, f"Invalid Request: frame over {server.max_message_bytes} bytes")
    try:
        request = loads(text)
    except ProtocolError:
        return error_response(JsonRpcErrorCode.PARSE_ERROR, "Parse error: the frame is not valid JSON")
    return await server.mcp.handle(request, session=session)


async def serve_mcp_websocket(ws: WebSocket, server: HTTPEnvServer) -> None:
    """Serve one ``/mcp`` WebSocket until the peer leaves or the server ends its session."""
    await ws.accept()
    try:
        session = await server.sessions.create("mcp-ws")
    except OpenEnvError as err:  # capacity, or the environment could not be built
        await _send(ws, error_response(JsonRpcErrorCode.SERVER_ERROR, err.message, data=err.to_wire()))
        await _hang_up(ws)
        return
    ended = asyncio.Event()

    def closed_by_server(reason: str) -> None:  # reaped when idle
        ended.set()
        reply = error_response(JsonRpcErrorCode.SERVER_ERROR, reason, data=SessionNotFoundError(reason).to_wire())
        asyncio.ensure_future(_send(ws, reply)).add_done_callback(lambda _: asyncio.ensure_future(_hang_up(ws)))

    session.on_close = closed_by_server
    try:
        while not ended.is_set():
            message = await ws.receive()
            if message["type"] == "websocket.disconnect" or ended.is_set():
                break
            reply = await _answer(server, message, session)
            session.touch()
            await _send(ws, reply)
    except (WebSocketDisconnect, RuntimeError, OSError):
        log.debug("MCP WebSocket peer left", exc_info=True)
    finally:
        session.on_close = None
        if not ended.is_set():
            try:
                await server.sessions.close(session.id)
            except SessionNotFoundError:
                pass
        await _hang_up(ws)
