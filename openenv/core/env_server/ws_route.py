"""``/ws``: one connection is one session. Parse each frame once, dispatch on its type,
answer errors with coded replies, and keep the session open after a bad frame.

Additive to the published protocol: a ``request_id`` (any top-level message key) is echoed
back, a top-level ``timeout_s`` sets the step deadline, and the handshake advertises both
with the ``x-openenv-features`` response header.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect, WebSocketState

from openenv.core._deadline import with_deadline
from openenv.core.env_server.dispatch import parse_timeout
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.serialization import dumps, loads
from openenv.core.env_server.sessions import Session
from openenv.core.errors import (
    CapacityError,
    FactoryError,
    OpenEnvError,
    ProtocolError,
    SessionNotFoundError,
)

__all__ = ["FEATURES", "build_ws_router"]

log = logging.getLogger("openenv.server")

FEATURES = "request-id,timeout,web-view"
REFUSAL_WAIT_S = 5.0
WATCH_AFTER_S = 0.05
_FATAL = (CapacityError, FactoryError, SessionNotFoundError)


def _error_frame(err: OpenEnvError, request_id: Any = None) -> bytes:
    frame: dict[str, Any] = {"type": "error", "data": err.to_wire()}
    if request_id is not None:
        frame["request_id"] = request_id
    return dumps(frame)


class _Connection:
    """One WebSocket and its session.

    Frames are read directly while idle. A call that outlasts ``WATCH_AFTER_S`` gets an
    outstanding receive armed beside it, so a peer that vanishes mid-step is noticed and the
    call cancelled; quick calls (the common case) pay nothing for that, not even a timer each.
    """

    def __init__(self, server: HTTPEnvServer, ws: WebSocket) -> None:
        self.server = server
        self.ws = ws
        self.session: Session | None = None
        self._attached: Session | None = None  # a session joined with ?session_id= (not ours to close)
        self._recv: asyncio.Future | None = None
        self._task = asyncio.current_task()  # the connection's handler task, cancelled if the peer leaves
        self._call_started: float | None = None  # loop time the running call began (None: idle)
        self._watchdog: asyncio.TimerHandle | None = None
        self._watched: asyncio.Future | None = None  # the receive whose arrival _on_frame watches
        self._peer_left = False

    async def send(self, frame: bytes) -> None:
        """One text frame. While the socket is open it goes straight to the ASGI ``send`` (what
        Starlette's ``send_text`` does then, minus its per-message state checks)."""
        ws = self.ws
        if ws.application_state is not WebSocketState.CONNECTED:
            await ws.send_text(frame.decode())  # Starlette's own errors for a closed socket
            return
        try:
            await ws._send({"type": "websocket.send", "text": frame.decode()})
        except OSError:
            ws.application_state = WebSocketState.DISCONNECTED
            raise WebSocketDisconnect(code=1006) from None

    async def next_message(self) -> dict[str, Any]:
        """The next ASGI message (a frame or the disconnect), straight from the ASGI ``receive``
        while the socket is open, keeping Starlette's view of the client's state."""
        task, self._recv = self._recv, None
        if task is not None:
            return await task
        ws = self.ws
        if ws.client_state is not WebSocketState.CONNECTED:
            return await ws.receive()
        message = await ws._receive()
        kind = message["type"]
        if kind == "websocket.disconnect":
            ws.client_state = WebSocketState.DISCONNECTED
        elif kind != "websocket.receive":
            raise RuntimeError(f"Expected ASGI message 'websocket.receive' or 'websocket.disconnect', got {kind!r}")
        return message

    async def run_watching_peer(self, coro: Any) -> tuple[bool, Any]:
        """Await ``coro``; if the peer disconnects meanwhile, cancel it. Returns (peer_alive, result).

        One watchdog timer per connection (armed by the first call, re-armed only while calls
        run) rather than one per call: a call still running ``WATCH_AFTER_S`` after it started
        gets an outstanding receive armed beside it.
        """
        if self._recv is not None and self._recv.done() and _is_disconnect(self._recv):
            coro.close()
            return False, None
        loop = asyncio.get_running_loop()
        self._peer_left = False
        self._call_started = loop.time()
        if self._watchdog is None:
            self._watchdog = loop.call_later(WATCH_AFTER_S, self._check_call, loop)
        try:
            return True, await coro
        except asyncio.CancelledError:
            if not self._peer_left:
                raise
            me = self._task
            if me is not None and hasattr(me, "uncancel"):
                me.uncancel()
            log.debug("call cancelled: the peer left mid-step")
            return False, None
        finally:
            self._call_started = None

    def _check_call(self, loop: asyncio.AbstractEventLoop) -> None:
        """The watchdog: watch the peer beside a call that has run ``WATCH_AFTER_S``."""
        self._watchdog = None
        started = self._call_started
        if started is None:  # idle: the next call arms it again
            return
        due = started + WATCH_AFTER_S
        if loop.time() < due:  # a newer call: check it when it is due
            self._watchdog = loop.call_at(due, self._check_call, loop)
            return
        if self._recv is None:
            self._recv = asyncio.ensure_future(self.ws.receive())
        if self._recv is not self._watched:
            self._watched = self._recv
            self._recv.add_done_callback(self._on_frame)

    def _on_frame(self, task: asyncio.Future) -> None:
        """A frame (or the disconnect) arrived while being watched: cancel a running call if the
        peer left; a ``reset`` interrupts a running step (it is handled once the step has ended)."""
        me = self._task
        if self._call_started is None or me is None:
            return
        if _is_disconnect(task):
            self._peer_left = True
            me.cancel()
        elif self.session is not None and _is_reset(task):
            self.session.interrupt("interrupted by a reset on the same session")

    async def handle(self, message: dict[str, Any]) -> bool:
        """Handle one frame; False ends the connection."""
        request_id = None
        try:
            frame = self._parse(message)
            request_id = frame.get("request_id")
            kind = frame.get("type")
            if kind == "close":
                return False
            session = self.session
            if session is None:
                session = await self._session()
            else:
                session.touch()
            if kind == "step":
                timeout_s = parse_timeout(frame.get("timeout_s"))
                alive, payload = await self.run_watching_peer(
                    self.server.dispatcher.step(session, frame.get("data"), timeout_s=timeout_s)
                )
                if not alive:
                    return False
                reply = {"type": "observation", "data": payload}
            elif kind == "reset":
                data = frame.get("data") or {}
                alive, payload = await self.run_watching_peer(
                    self.server.dispatcher.reset(session, data, timeout_s=parse_timeout(frame.get("timeout_s")))
                )
                if not alive:
                    return False
                reply = {"type": "observation", "data": payload}
            elif kind == "state":
                reply = {"type": "state", "data": await self.server.dispatcher.state(session)}
            elif kind == "web_view":
                reply = {"type": "web_view", "data": await self.server.dispatcher.web_view(session, frame.get("data"))}
            elif kind == "mcp":
                reply = {"type": "mcp", "data": await self._mcp(frame.get("data"), session)}
            else:
                raise ProtocolError(f"Unknown message type: {kind!r}", code="UNKNOWN_TYPE")
        except _FATAL as err:
            await self.send(_error_frame(err, request_id))
            return False
        except OpenEnvError as err:
            await self.send(_error_frame(err, request_id))
            return True
        if request_id is not None:
            reply["request_id"] = request_id
        await self.send(dumps(reply))
        return True

    async def _mcp(self, request: Any, session: Session) -> dict[str, Any]:
        rpc = getattr(self.server, "mcp", None)
        if rpc is None:
            raise ProtocolError("This server has no MCP endpoint", code="UNKNOWN_TYPE")
        return await rpc.handle(request, session=session)

    def attach(self, session_id: str) -> None:
        """Join the session ``session_id`` (opened with ``openenv/session/create``); raises SessionNotFoundError."""
        try:
            session = self.server.sessions.get(session_id)
        except SessionNotFoundError:
            raise SessionNotFoundError(f"Unknown session_id: {session_id}") from None
        if session.attached:
            raise SessionNotFoundError(f"Session {session_id} already has an attached WebSocket")
        session.attached = True
        session.on_close = self._closed_by_server
        self.session = session
        self._attached = session

    def _parse(self, message: dict[str, Any]) -> dict[str, Any]:
        text = message.get("text")
        if text is None:
            raise ProtocolError("Binary frames are not supported; send JSON text", code="UNSUPPORTED_FRAME")
        if len(text) > self.server.max_message_bytes:
            raise ProtocolError(
                f"Message over {self.server.max_message_bytes} bytes", code="MESSAGE_TOO_LARGE"
            )
        frame = loads(text)
        if not isinstance(frame, dict):
            raise ProtocolError("A message must be a JSON object with a 'type'", code="INVALID_JSON")
        return frame

    async def _session(self) -> Session:
        if self.session is None:
            self.session = await self.server.sessions.create("ws")
            self.session.on_close = self._closed_by_server
        else:
            self.session.touch()
        return self.session

    async def refuse(self, err: OpenEnvError) -> None:
        """Answer the peer's first frame with ``err`` (so clients read it as a reply), then hang up."""
        request_id = None
        try:
            message = await with_deadline(self.next_message(), REFUSAL_WAIT_S)
            if message.get("type") == "websocket.disconnect":
                return
            frame = loads(message["text"]) if message.get("text") else None
            request_id = frame.get("request_id") if isinstance(frame, dict) else None
        except (TimeoutError, OpenEnvError):
            log.debug("no usable first frame before refusing", exc_info=True)
        await self.send(_error_frame(err, request_id))

    def _closed_by_server(self, reason: str) -> None:
        """The server closed our session (idle reaping): tell the peer, then hang up."""
        self.session = None
        self._attached = None
        asyncio.ensure_future(self._hang_up(SessionNotFoundError(reason)))

    async def _hang_up(self, err: OpenEnvError) -> None:
        try:
            await self.send(_error_frame(err))
            await self.ws.close(code=1001, reason="session closed")
        except (RuntimeError, WebSocketDisconnect, OSError):
            log.debug("peer already gone", exc_info=True)

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._recv is not None:
            self._recv.cancel()
        if self._attached is not None:
            attached, self._attached = self._attached, None
            attached.attached = False
            attached.on_close = None
            if attached.close_when_detached:
                await self.server.sessions.close(attached.id)
            self.session = None
        if self.session is not None:
            await self.server.sessions.close(self.session.id)
            self.session = None
        if self.ws.application_state == WebSocketState.CONNECTED:
            try:
                await self.ws.close()
            except (RuntimeError, WebSocketDisconnect):
                log.debug("socket already closed", exc_info=True)


def _is_disconnect(task: asyncio.Future) -> bool:
    if task.cancelled() or task.exception() is not None:
        return True
    return task.result().get("type") == "websocket.disconnect"


def _is_reset(task: asyncio.Future) -> bool:
    """Whether the received frame is a ``reset`` (parsed again when handled; this is rare)."""
    text = task.result().get("text")
    if not text or '"reset"' not in text:
        return False
    try:
        frame = loads(text)
    except OpenEnvError:
        return False
    return isinstance(frame, dict) and frame.get("type") == "reset"


def build_ws_router(server: HTTPEnvServer) -> APIRouter:
    router = APIRouter()

    @router.websocket("/ws")
    async def ws_endpoint(ws: WebSocket) -> None:
        await ws.accept(headers=[(b"x-openenv-features", FEATURES.encode())])
        conn = _Connection(server, ws)
        try:
            # Open the session eagerly so capacity errors are reported at connect time.
            try:
                session_id = ws.query_params.get("session_id")
                if session_id:
                    conn.attach(session_id)
                else:
                    await conn._session()
            except _FATAL as err:
                await conn.refuse(err)
                return
            while True:
                message = await conn.next_message()
                if message.get("type") == "websocket.disconnect":
                    return
                if not await conn.handle(message):
                    return
        except WebSocketDisconnect:
            return
        finally:
            await conn.close()

    return router
