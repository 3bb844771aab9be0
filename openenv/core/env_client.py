"""``EnvClient``: an async WebSocket session with one environment server.

Usage::

    async with MyEnvClient(base_url="http://127.0.0.1:8000") as client:
        result = await client.reset(seed=1)
        result = await client.step(MyAction(text="hi"))

Subclasses implement ``_step_payload``, ``_parse_result`` and ``_parse_state``
(``GenericEnvClient`` does, for plain dicts).
"""

from __future__ import annotations

import asyncio
import enum
import itertools
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import websockets
from websockets.asyncio.client import ClientConnection, connect

from openenv.core._deadline import with_deadline
from openenv.core.client_types import StepResult
from openenv.core.errors import (
    ClientStateError,
    ConnectionLostError,
    OpenEnvError,
    StepTimeoutError,
    error_from_wire,
)
from openenv.core.wire import dumps, loads

if TYPE_CHECKING:
    from openenv.core.sync_client import SyncEnvClient

__all__ = ["ClientState", "EnvClient", "ws_url"]

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")

_REPLY_MARGIN_S = 5.0


class ClientState(enum.Enum):
    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


def ws_url(base_url: str) -> str:
    """``http(s)://host:port[/prefix]`` → ``ws(s)://host:port[/prefix]/ws``."""
    url = base_url.rstrip("/")
    if url.startswith("https://"):
        url = "wss://" + url[len("https://") :]
    elif url.startswith("http://"):
        url = "ws://" + url[len("http://") :]
    elif not url.startswith(("ws://", "wss://")):
        url = "ws://" + url
    return url if url.endswith("/ws") else url + "/ws"


class EnvClient(ABC, Generic[ActT, ObsT, StateT]):
    """Async client for one environment session over WebSocket.

    Args:
        base_url: the server's HTTP URL (``ws://`` works too).
        connect_timeout_s: time allowed to open the socket.
        message_timeout_s: time allowed for each reply (a step's own ``timeout_s`` extends it).
        max_message_size_mb: largest reply accepted.
        provider: a runtime provider whose container/process this client stops on ``close``.
    """

    def __init__(
        self,
        base_url: str,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 60.0,
        max_message_size_mb: float = 100.0,
        provider: Any = None,
    ) -> None:
        self.base_url = base_url
        self._url = ws_url(base_url)
        self._connect_timeout = connect_timeout_s
        self._message_timeout = message_timeout_s
        self._max_size = int(max_message_size_mb * 1024 * 1024)
        self._provider = provider
        self._ws: ClientConnection | None = None
        self._state = ClientState.UNOPENED
        self._features: frozenset[str] = frozenset()
        self._ids = itertools.count(1)
        #: ``(request, reply)``: the JSON texts of the last exchange that got a non-error reply, as
        #: sent and received (recording journals them instead of serialising the step again).
        self.last_exchange: tuple[bytes, bytes] | None = None

    # -- subclass hooks -------------------------------------------------------------------

    @abstractmethod
    def _step_payload(self, action: ActT) -> dict[str, Any]:
        """Convert an action to the JSON object sent as the step's ``data``."""

    @abstractmethod
    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ObsT]:
        """Build a ``StepResult`` from ``{"observation", "reward", "done"}``."""

    @abstractmethod
    def _parse_state(self, payload: dict[str, Any]) -> StateT:
        """Build the state object from the server's state JSON."""

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def client_state(self) -> ClientState:
        return self._state

    async def connect(self) -> EnvClient[ActT, ObsT, StateT]:
        """Open the WebSocket (a no-op when already open)."""
        if self._state is ClientState.OPEN:
            return self
        if self._state is ClientState.CLOSED:
            raise ClientStateError("This client is closed; create a new one")
        try:
            self._ws = await connect(
                self._url,
                open_timeout=self._connect_timeout,
                max_size=self._max_size,
                compression=None,
                ping_interval=20,
                ping_timeout=20,
                close_timeout=2,
            )
        except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
            raise ConnectionLostError(f"Could not connect to {self._url}: {exc}") from exc
        response = self._ws.response
        header = response.headers.get("x-openenv-features", "") if response is not None else ""
        self._features = frozenset(f.strip() for f in header.split(",") if f.strip())
        self._state = ClientState.OPEN
        return self

    async def close(self) -> None:
        """Close the session and stop whatever a provider started for this client."""
        if self._state is ClientState.CLOSED:
            return
        self._state = ClientState.CLOSED
        ws, self._ws = self._ws, None
        try:
            if ws is not None:
                try:
                    await with_deadline(ws.send(dumps({"type": "close"}), text=True), 2.0)
                except (websockets.exceptions.WebSocketException, OSError, TimeoutError):
                    pass  # the server may already be gone; closing anyway
                await ws.close()
        finally:
            await self._stop_provider()

    async def __aenter__(self) -> EnvClient[ActT, ObsT, StateT]:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def sync(self) -> SyncEnvClient:
        """A synchronous wrapper around this client."""
        from openenv.core.sync_client import SyncEnvClient

        return SyncEnvClient(self)

    @classmethod
    async def from_docker_image(cls, image: str, provider: Any = None, **kwargs: Any) -> EnvClient:
        """Start ``image`` with ``provider`` (local Docker by default) and connect to it.

        Closing the client stops the container; a failed start leaves nothing running.
        """
        from openenv.core.containers.runtime.launch import start_client

        return await start_client(cls, image, provider=provider, **kwargs)

    @classmethod
    def from_docker_image_sync(cls, image: str, provider: Any = None, **kwargs: Any) -> SyncEnvClient:
        """Blocking :meth:`from_docker_image`: returns a connected ``SyncEnvClient``.

        ``provider`` may be an instance or a kind name (``"process"``, ``"docker"``, ``"swarm"``).
        """
        from openenv.core.containers.runtime.launch import start_client_sync

        return start_client_sync(cls, image, provider=provider, **kwargs)

    # -- operations -----------------------------------------------------------------------

    async def reset(self, **kwargs: Any) -> StepResult[ObsT]:
        """Start an episode; kwargs (``seed``, ``episode_id``, env-specific) go to the server."""
        reply = await self._request({"type": "reset", "data": kwargs})
        return self._parse_result(reply["data"])

    async def step(self, action: ActT, timeout_s: float | None = None, **kwargs: Any) -> StepResult[ObsT]:
        """Apply one action; ``timeout_s`` asks the server to enforce a deadline."""
        message: dict[str, Any] = {"type": "step", "data": self._step_payload(action)}
        if timeout_s is not None and "timeout" in self._features:
            message["timeout_s"] = timeout_s
        wait = max(self._message_timeout, timeout_s + _REPLY_MARGIN_S) if timeout_s else None
        reply = await self._request(message, wait_s=wait)
        return self._parse_result(reply["data"])

    async def state(self) -> StateT:
        """The episode's current state."""
        reply = await self._request({"type": "state"})
        return self._parse_state(reply["data"])

    async def _request(self, message: dict[str, Any], wait_s: float | None = None) -> dict[str, Any]:
        if self._state is ClientState.UNOPENED:
            await self.connect()
        if self._state is ClientState.CLOSED or self._ws is None:
            raise ClientStateError("This client is closed; create a new one")
        rid = None
        if "request-id" in self._features:
            rid = next(self._ids)
            message["request_id"] = rid
        ws = self._ws
        request = dumps(message)
        try:
            await ws.send(request, text=True)  # JSON bytes as a text frame, not re-encoded
            reply, raw = await with_deadline(self._receive(ws, rid), wait_s or self._message_timeout)
        except TimeoutError:
            if rid is None:  # no request ids: a late reply would be misread, so drop the socket
                await self._abandon()
            raise StepTimeoutError(
                f"No reply from {self._url} within {wait_s or self._message_timeout:g} s"
            ) from None
        except websockets.exceptions.ConnectionClosed as exc:
            last_words = await self._last_error(ws)
            await self._abandon()
            if last_words is not None:
                raise last_words from None
            raise ConnectionLostError(f"Connection to {self._url} lost: {exc}") from exc
        if reply.get("type") == "error":
            err = error_from_wire(reply.get("data") or {})
            if err.code in ("CAPACITY_REACHED", "FACTORY_ERROR", "SESSION_ERROR"):
                await self._abandon()
            raise err
        self.last_exchange = (request, raw)
        return reply

    async def _receive(self, ws: ClientConnection, rid: int | None) -> tuple[dict[str, Any], bytes]:
        while True:
            raw = await ws.recv(decode=False)  # the text frame's bytes (orjson checks the UTF-8)
            try:
                reply = loads(raw)
            except OpenEnvError as exc:
                raise ConnectionLostError(f"Server sent invalid JSON: {exc}") from exc
            if not isinstance(reply, dict):
                raise ConnectionLostError("Server sent a reply that is not a JSON object")
            if rid is None or reply.get("request_id", rid) == rid:
                return reply, raw
            # a stale reply to a request that already timed out: skip it

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

    async def _abandon(self) -> None:
        self._state = ClientState.CLOSED
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()
        await self._stop_provider()

    async def _stop_provider(self) -> None:
        """Stop what a provider started for this client, off the event loop (it may block)."""
        provider, self._provider = self._provider, None
        if provider is not None:
            await asyncio.to_thread(provider.stop_container)
