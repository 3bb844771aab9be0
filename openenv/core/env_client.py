"""``EnvClient``: one WebSocket session with one environment server, for async and sync code.

Usage::

    async with MyEnvClient(base_url="http://127.0.0.1:8000") as client:   # async
        result = await client.reset(seed=1)
        result = await client.step(MyAction(text="hi"))

    with MyEnvClient(base_url="http://127.0.0.1:8000") as client:         # sync (or ``.sync()``)
        result = client.reset(seed=1)

``reset``/``step``/``state``/``connect``/``new_session`` return the result in sync code and an
awaitable where an event loop runs. A socket lost to a drop, a server restart or a timeout is
replaced on the next call (bounded backoff, then ``ReconnectFailedError``); a ``reset`` then works,
while a ``step`` raises ``EpisodeLostError`` until one does (a fresh environment is never stepped
as if it were the lost one). Subclasses implement ``_step_payload``, ``_parse_result`` and
``_parse_state`` (``GenericEnvClient`` does, for plain dicts).

Two base classes hold the rest: ``client_reconnect.ReconnectingClient`` opens, drops and replaces
the socket; ``client_provider.ProviderOwnedClient`` has the ``from_docker_image``/``from_env``
factories and starts and stops the provider of a client made with ``provider=`` and no URL.
"""

from __future__ import annotations

# ``x as x``: names this module imported before its reconnect and provider code moved to
# ``client_reconnect`` and ``client_provider``, still importable from here.
import asyncio
import itertools
import time as time
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from typing import NoReturn as NoReturn

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as connect
from websockets.protocol import State

from openenv.core._deadline import SerialDeadline, with_deadline
from openenv.core.client_actions import guard_step_payload
from openenv.core.client_handles import AutoResult
from openenv.core.client_mode import resolve_client_mode
from openenv.core.client_provider import ProviderOwnedClient
from openenv.core.client_provider import start_owned_provider as start_owned_provider
from openenv.core.client_provider import stop_provider as stop_provider
from openenv.core.client_reconnect import ReconnectingClient
from openenv.core.client_types import ClientState, StepResult, ws_url
from openenv.core.errors import AuthenticationError as AuthenticationError
from openenv.core.errors import (
    ClientStateError,
    ConnectionLostError,
    OpenEnvError,
    ReconnectFailedError,
    StepTimeoutError,
    error_from_wire,
)
from openenv.core.errors import EpisodeLostError as EpisodeLostError
from openenv.core.wire import dumps, loads

if TYPE_CHECKING:
    from openenv.core.sync_client import SyncEnvClient

__all__ = ["ClientState", "EnvClient", "ws_url"]

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")

_REPLY_MARGIN_S = 5.0
_SESSION_ENDING = frozenset(("CAPACITY_REACHED", "FACTORY_ERROR", "SESSION_ERROR"))
_running_loop = asyncio._get_running_loop  # None outside a running loop (no exception to raise)


class EnvClient(ProviderOwnedClient, ReconnectingClient, ABC, Generic[ActT, ObsT, StateT]):
    """Client for one environment session over WebSocket.

    Args:
        base_url: the server's HTTP URL (``ws://`` works too); may be omitted when ``provider`` can
            start the env by itself (0.10's provider-owned startup: started on connect).
        connect_timeout_s: time allowed to open the socket.
        message_timeout_s: time allowed for each reply (a step's own ``timeout_s`` extends it).
        max_message_size_mb: largest reply accepted.
        provider: a runtime provider whose container/process this client stops on ``close``.
        websocket_ping_interval_s, websocket_ping_timeout_s: keepalive pings (``None`` disables).
        headers: extra HTTP headers for the WebSocket handshake (and ``/mcp``), e.g. a bearer token.
        reconnect_attempts, reconnect_timeout_s: bounds on replacing a lost socket.
        mode: ``"simulation"`` or ``"production"`` (0.10's client mode; see ``__init__``).
    """

    def __init__(
        self,
        base_url: str | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 60.0,
        max_message_size_mb: float = 100.0,
        provider: Any = None,
        *,
        websocket_ping_interval_s: float | None = 20.0,
        websocket_ping_timeout_s: float | None = 20.0,
        headers: dict[str, str] | None = None,
        reconnect_attempts: int = 5,
        reconnect_timeout_s: float = 10.0,
        mode: str | None = None,
    ) -> None:
        """Arguments as in the class docstring; ``mode``: ``"simulation"`` (default) or ``"production"``,
        ``None`` reads ``OPENENV_CLIENT_MODE`` (case-insensitive; else ``ValueError``; read-only after)."""
        if base_url is None and provider is None:
            raise ValueError("EnvClient requires either base_url or provider.")
        self._client_mode = resolve_client_mode(mode, self._default_mode)
        self.base_url: str | None = None
        self._url: str | None = None
        if base_url is not None:
            self._set_base_url(base_url)
        self._connect_timeout = connect_timeout_s
        self._message_timeout = message_timeout_s
        self._max_size = int(max_message_size_mb * 1024 * 1024)
        self._ping_interval = websocket_ping_interval_s
        self._ping_timeout = websocket_ping_timeout_s
        self.headers: dict[str, str] = dict(headers or {})
        self._reconnect_attempts = max(1, int(reconnect_attempts))
        self._reconnect_timeout = reconnect_timeout_s
        self._defer_reopen = False  # set by VectorEnvClient: it reconnects lost sessions together
        self._provider = provider
        self._ws: ClientConnection | None = None
        self._ws_loop: asyncio.AbstractEventLoop | None = None
        self._state = ClientState.UNOPENED
        self._features: frozenset[str] = frozenset()
        self._ids = itertools.count(1)
        self._reply_deadline = SerialDeadline()  # one timer for this client's requests, not one each
        self._episode = False  # a reset succeeded on the current session
        self._lost: str | None = None  # why the previous session's episode was lost (until a reset)
        self._sync_face: SyncEnvClient | None = None
        self._children: list[EnvClient[Any, Any, Any]] = []
        #: ``(request, reply)``: the JSON texts of the last exchange that got a non-error reply, as
        #: sent and received (recording journals them instead of serialising the step again).
        self.last_exchange: tuple[bytes, bytes] | None = None

    #: the mode used when neither ``mode=`` nor ``OPENENV_CLIENT_MODE`` gives one
    _default_mode = "simulation"

    @property
    def _mode(self) -> str:
        """The client mode (read-only, as in 0.10: assigning it raises ``AttributeError``)."""
        return self._client_mode

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("_step_payload")
        if callable(own) and not getattr(own, "__openenv_guarded__", False):
            cls._step_payload = guard_step_payload(cls, own)  # type: ignore[method-assign]

    # -- subclass hooks -------------------------------------------------------------------

    @abstractmethod
    def _step_payload(self, action: ActT) -> dict[str, Any]:
        """Convert an action to the JSON object sent as the step's ``data``."""

    @abstractmethod
    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ObsT]:
        """Build a ``StepResult`` from ``{"observation", "reward", "done"}`` (see ``split_observation``)."""

    @abstractmethod
    def _parse_state(self, payload: dict[str, Any]) -> StateT:
        """Build the state object from the server's state JSON."""

    # -- sync or async: one entry point each ----------------------------------------------

    def _dispatch(self, factory: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        """The result in sync code; an awaitable where a loop runs (our own loop: the coroutine)."""
        loop = _running_loop()
        face = self._sync_face
        if loop is None:
            return self.sync()._run(factory())
        if face is not None:
            if loop is face._loop:
                return factory()
            if self._ws_loop is face._loop:  # bound to its blocking face, called from a loop
                return face._run(factory())
        return AutoResult(factory, lambda: self.sync()._run(factory()))

    def _sync_bound(self) -> bool:
        """Used through its blocking face (``with client:`` or ``client.sync()``)."""
        face = self._sync_face
        return face is not None and (self._ws_loop is face._loop or self._ws_loop is None)

    def reset(self, **kwargs: Any) -> Any:
        """Start an episode; kwargs (``seed``, ``episode_id``, env-specific) go to the server."""
        return self._dispatch(lambda: self._reset_async(**kwargs))

    def step(self, action: ActT, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """Apply one action; ``timeout_s`` asks the server to enforce a deadline."""
        return self._dispatch(lambda: self._step_async(action, timeout_s, **kwargs))

    def state(self) -> Any:
        """The episode's current state."""
        return self._dispatch(self._state_async)

    def web_view(self, observation: dict[str, Any] | None = None) -> Any:
        """The environment's own view of ``observation`` (its ``render_web``/``web_actions`` hooks):
        ``{"html": str | None, "actions": [{"label", "action"}], "problem": str | None}``, drawn by
        this session's environment; a server without the hooks' frame gives an empty view."""
        return self._dispatch(lambda: self._web_view_async(observation))

    def connect(self) -> Any:
        """Open the WebSocket (a no-op when already open); returns the client."""
        return self._dispatch(self._connect_async)

    def close(self) -> Any:
        """Close the session, its ``new_session`` children and whatever a provider started."""
        loop = _running_loop()
        face = self._sync_face
        if loop is None or (face is not None and loop is not face._loop and self._sync_bound()):
            self.sync().close()
            return None
        return self._close_async()

    def new_session(self) -> Any:
        """Another connected session with the same server and options, closed with this one."""
        child = self._spawn()
        self._children.append(child)
        if _running_loop() is None or self._sync_bound():
            child.sync().connect()
            return child

        async def connected() -> EnvClient[ActT, ObsT, StateT]:
            await child._connect_entry()
            return child

        return connected()

    #: the blocking face's class (a typed client may add methods to it)
    _sync_class: type | None = None

    def sync(self) -> SyncEnvClient:
        """The blocking face of this client (one per client)."""
        if self._sync_face is None:
            from openenv.core.sync_client import SyncEnvClient

            (self._sync_class or SyncEnvClient)(self)  # registers itself as ``_sync_face``
        assert self._sync_face is not None
        return self._sync_face

    def __enter__(self) -> EnvClient[ActT, ObsT, StateT]:
        face = self.sync()
        face.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sync().close()

    async def __aenter__(self) -> EnvClient[ActT, ObsT, StateT]:
        await self._connect_entry()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._close_entry()

    async def _connect_entry(self) -> Any:
        """Open the client: through a subclass's own ``async def connect`` where it has one (0.3-style
        subclasses extend ``connect``/``close`` and call ``super()``), else directly."""
        if type(self).connect is not EnvClient.connect:
            return await self.connect()
        return await self._connect_async()

    async def _close_entry(self) -> None:
        """Close the client, through a subclass's own ``async def close`` where it has one."""
        if type(self).close is not EnvClient.close:
            await self.close()
        else:
            await self._close_async()

    def _spawn(self) -> EnvClient[ActT, ObsT, StateT]:
        self._ensure_base_url()
        return type(self)(
            base_url=self.base_url,
            connect_timeout_s=self._connect_timeout,
            message_timeout_s=self._message_timeout,
            max_message_size_mb=self._max_size / (1024 * 1024),
            websocket_ping_interval_s=self._ping_interval,
            websocket_ping_timeout_s=self._ping_timeout,
            headers=self.headers,
            reconnect_attempts=self._reconnect_attempts,
            reconnect_timeout_s=self._reconnect_timeout,
            mode=self._client_mode,
        )

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def client_state(self) -> ClientState:
        return self._state

    def _set_base_url(self, base_url: str) -> None:
        """Point the client at ``base_url`` (at construction, or once its provider has started)."""
        self.base_url = base_url.rstrip("/")
        self._url = ws_url(base_url)

    async def _connect_async(self) -> EnvClient[ActT, ObsT, StateT]:
        if self._state is ClientState.CLOSED:
            raise ClientStateError("This client is closed; create a new one")
        if self.base_url is None:
            await self._start_owned_provider()
        if self._ws is None or self._stale(self._ws):
            await self._reopen()
        return self

    async def _close_async(self) -> None:
        """Close the session and stop whatever a provider started for this client."""
        children, self._children = self._children, []
        for child in children:
            if child._sync_bound():
                await asyncio.to_thread(child.sync().close)
            else:
                await child._close_entry()
        if self._state is ClientState.CLOSED:
            return
        self._state = ClientState.CLOSED
        self._reply_deadline.cancel()
        ws, loop = self._ws, self._ws_loop
        self._ws = self._ws_loop = None
        try:
            if ws is not None and loop is _running_loop():
                try:
                    await with_deadline(ws.send(dumps({"type": "close"}), text=True), 2.0)
                except (websockets.exceptions.WebSocketException, OSError, TimeoutError):
                    pass  # the server may already be gone; closing anyway
                await ws.close()
        finally:
            await self._stop_provider()

    # -- operations -----------------------------------------------------------------------

    async def _reset_async(self, **kwargs: Any) -> StepResult[ObsT]:
        message = {"type": "reset", "data": kwargs}
        try:
            reply = await self._request(message)
        except ReconnectFailedError:
            raise
        except ConnectionLostError:
            if self._state is not ClientState.DISCONNECTED:
                raise
            reply = await self._request({"type": "reset", "data": kwargs})  # once, on a fresh socket
        result = self._parse_result(reply["data"])
        self._episode, self._lost = True, None
        return result

    async def _step_async(self, action: ActT, timeout_s: float | None = None, **kwargs: Any) -> StepResult[ObsT]:
        message: dict[str, Any] = {"type": "step", "data": self._step_payload(action)}
        if timeout_s is not None and "timeout" in self._features:
            message["timeout_s"] = timeout_s
        wait = max(self._message_timeout, timeout_s + _REPLY_MARGIN_S) if timeout_s else None
        reply = await self._request(message, wait_s=wait, step=True)
        self._episode = True  # a step before any reset starts the episode, as on 0.10
        return self._parse_result(reply["data"])

    async def _state_async(self) -> StateT:
        reply = await self._request({"type": "state"})
        return self._parse_state(reply["data"])

    async def _web_view_async(self, observation: dict[str, Any] | None) -> dict[str, Any]:
        await self._connect_async()  # the server's features are known once connected
        if "web-view" not in self._features:
            return {"html": None, "actions": [], "problem": None}
        reply = await self._request({"type": "web_view", "data": {"observation": observation or {}}})
        return reply["data"]

    async def _request(self, message: dict[str, Any], wait_s: float | None = None, step: bool = False) -> dict[str, Any]:
        sent = await self._send(message, step)
        return await self._reply(sent, wait_s, step)

    async def _send(self, message: dict[str, Any], step: bool = False) -> tuple[ClientConnection, int | None, bytes]:
        """Send one request (reconnecting first if the socket is gone); what ``_reply`` waits on."""
        ws = self._ws
        if ws is None or ws.state is not State.OPEN or self._ws_loop is not _running_loop():
            await self._reopen()
            ws = self._ws
            assert ws is not None
        if step and self._lost is not None:
            raise self._episode_lost()
        rid = None
        if "request-id" in self._features:
            rid = next(self._ids)
            message["request_id"] = rid
        request = dumps(message)
        try:
            await ws.send(request, text=True)  # JSON bytes as a text frame, not re-encoded
        except websockets.exceptions.ConnectionClosed as exc:
            await self._closed_under(ws, exc, step)
        return ws, rid, request

    async def _reply(self, sent: tuple[ClientConnection, int | None, bytes], wait_s: float | None = None,
                     step: bool = False) -> dict[str, Any]:  # fmt: skip
        """Wait for the reply to what ``_send`` sent; typed errors for error replies and losses."""
        ws, rid, request = sent
        try:
            reply, raw = await self._reply_deadline.run(self._receive(ws, rid), wait_s or self._message_timeout)
        except TimeoutError:
            if rid is None:  # no request ids: a late reply would be misread, so drop the socket
                self._drop("a reply timed out")
            raise StepTimeoutError(
                f"No reply from {self._url} within {wait_s or self._message_timeout:g} s"
            ) from None
        except asyncio.CancelledError:
            if rid is None:
                self._drop("a request was cancelled")
            raise
        except websockets.exceptions.ConnectionClosed as exc:
            await self._closed_under(ws, exc, step)
        if reply.get("type") == "error":
            err = error_from_wire(reply.get("data") or {})
            if err.code in _SESSION_ENDING:
                self._drop(f"the server ended the session ({err.code})")
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
