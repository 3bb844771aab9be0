"""How an ``EnvClient`` opens its WebSocket, loses it and replaces it.

:class:`ReconnectingClient` is a base class of :class:`~openenv.core.env_client.EnvClient` (it
works on the client's own attributes, set in ``EnvClient.__init__``). A socket lost to a drop, a
server restart or a timeout is forgotten (``_drop``: an episode on it is lost) and replaced on the
next call (``_reopen``: bounded backoff, then ``ReconnectFailedError``; a refused token is not
retried). A step on the replacement raises ``EpisodeLostError`` until a ``reset`` succeeds: a fresh
environment is never stepped as if it were the lost one.
"""

from __future__ import annotations

import asyncio
import time
from typing import NoReturn

import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.protocol import State

from openenv.core._deadline import with_deadline
from openenv.core.client_types import ClientState
from openenv.core.errors import (
    AuthenticationError,
    ClientStateError,
    ConnectionLostError,
    EpisodeLostError,
    OpenEnvError,
    ReconnectFailedError,
    error_from_wire,
)
from openenv.core.wire import loads

__all__ = ["ReconnectingClient"]

_running_loop = asyncio._get_running_loop  # None outside a running loop (no exception to raise)


class ReconnectingClient:
    """The socket half of ``EnvClient``: open it, forget a lost one, replace it with backoff."""

    # set by ``EnvClient.__init__``
    _url: str | None
    _connect_timeout: float
    _max_size: int
    _ping_interval: float | None
    _ping_timeout: float | None
    headers: dict[str, str]
    _reconnect_attempts: int
    _reconnect_timeout: float
    _defer_reopen: bool
    _ws: ClientConnection | None
    _ws_loop: asyncio.AbstractEventLoop | None
    _state: ClientState
    _features: frozenset[str]
    _episode: bool
    _lost: str | None

    def _needs_reopen(self) -> bool:
        """``_send`` would (re)connect first: no socket, a closed one, or one from another loop."""
        ws = self._ws
        return ws is None or ws.state is not State.OPEN or self._ws_loop is not _running_loop()

    def _stale(self, ws: ClientConnection) -> bool:
        return ws.state is not State.OPEN or self._ws_loop is not _running_loop()

    async def _reopen(self) -> None:
        """Replace a missing or stale socket: once when never opened, with backoff after a loss."""
        if self._state is ClientState.CLOSED:
            raise ClientStateError("This client is closed; create a new one")
        if self._ws is not None:
            moved = self._ws_loop is not _running_loop()
            self._drop("the client moved to another event loop" if moved else "the connection was closed")
        if self._state is ClientState.UNOPENED:
            await self._open_socket()
            return
        deadline = time.monotonic() + self._reconnect_timeout
        started, delay, last = time.monotonic(), 0.1, None
        for attempt in range(1, self._reconnect_attempts + 1):
            try:
                await self._open_socket()
                return
            except AuthenticationError:
                raise  # a refused token stays refused
            except ConnectionLostError as exc:
                last = exc
            if attempt == self._reconnect_attempts or time.monotonic() + delay > deadline:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)
        waited = time.monotonic() - started
        raise ReconnectFailedError(
            f"{self._url} stayed unreachable: {attempt} reconnect attempt(s) over {waited:.1f} s ({last})",
            attempts=attempt,
            waited_s=round(waited, 3),
        ) from last

    async def _open_socket(self) -> None:
        try:
            ws = await connect(
                self._url,
                open_timeout=self._connect_timeout,
                max_size=self._max_size,
                compression=None,
                ping_interval=self._ping_interval,
                ping_timeout=self._ping_timeout,
                close_timeout=2,
                additional_headers=self.headers or None,
            )
        except websockets.exceptions.InvalidStatus as exc:
            if exc.response.status_code in (401, 403):
                given = "the token sent was refused" if self._has_token() else "none was sent"
                raise AuthenticationError(
                    f"{self._url} requires a bearer token and {given}: pass headers={{'Authorization': "
                    "'Bearer <token>'}} (a provider's headers(), or the server's OPENENV_TOKEN)") from exc
            raise ConnectionLostError(f"Could not connect to {self._url}: {exc}") from exc
        except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
            raise ConnectionLostError(f"Could not connect to {self._url}: {exc}") from exc
        response = ws.response
        header = response.headers.get("x-openenv-features", "") if response is not None else ""
        self._features = frozenset(f.strip() for f in header.split(",") if f.strip())
        self._ws, self._ws_loop = ws, _running_loop()
        self._state = ClientState.OPEN

    def _has_token(self) -> bool:
        names = {k.lower() for k in (self.headers or {})}
        return "authorization" in names or "x-openenv-token" in names or "token=" in self._url

    def _drop(self, reason: str) -> None:
        """Forget the socket (closed in the background); an episode on it is lost."""
        ws, loop = self._ws, self._ws_loop
        self._ws = self._ws_loop = None
        if self._state is not ClientState.CLOSED:
            self._state = ClientState.DISCONNECTED
        if self._episode:
            self._episode, self._lost = False, reason
        if ws is None or loop is None or loop.is_closed():
            return
        transport = ws.transport  # abandoned: no close handshake to wait for (the server sees EOF)
        if loop is _running_loop():
            transport.abort()
        else:
            loop.call_soon_threadsafe(transport.abort)

    async def _closed_under(self, ws: ClientConnection, exc: Exception, step: bool) -> NoReturn:
        """The socket closed during a request: raise what the server said last, or the loss."""
        last_words = await self._last_error(ws)
        had_episode = self._episode
        self._drop("the connection was lost")
        if last_words is not None:
            raise last_words from None
        if step and had_episode:  # the episode is gone whether or not this step reached it
            if not self._defer_reopen:
                await self._reopen()
            raise self._episode_lost() from exc
        raise ConnectionLostError(f"Connection to {self._url} lost: {exc}") from exc

    def _episode_lost(self) -> EpisodeLostError:
        return EpisodeLostError(
            f"The episode was lost ({self._lost}) and this is a new session: call reset() to start a new episode",
            reason=self._lost,
        )

    @staticmethod
    async def _last_error(ws: ClientConnection) -> OpenEnvError | None:
        """An error frame the server sent just before hanging up (e.g. CAPACITY_REACHED)."""
        try:
            raw = await with_deadline(ws.recv(), 0.2)
            reply = loads(raw)
        except (websockets.exceptions.ConnectionClosed, TimeoutError, OpenEnvError):
            return None
        if isinstance(reply, dict) and reply.get("type") == "error":
            return error_from_wire(reply.get("data") or {})
        return None
