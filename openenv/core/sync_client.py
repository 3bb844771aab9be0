"""``SyncEnvClient``: the blocking face of an ``EnvClient`` (``client.sync()``, or ``with client:``).

It drives the async client on a private event loop: in the calling thread when no loop runs
there, or on a background thread when one does (a notebook, an async app). An async method of
the wrapped client that is not named here (a typed client's own) runs blocking too.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Coroutine
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.errors import ClientStateError

__all__ = ["SyncEnvClient", "is_async_client"]


def _loop_running_here() -> bool:
    return asyncio._get_running_loop() is not None


async def _inside(call: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a wrapped client's method on the private loop (so it sees a running loop) and await it."""
    result = call(*args, **kwargs)
    return await result if inspect.isawaitable(result) else result


FINALIZER_CLOSE_TIMEOUT_S = 5.0  # a client collected without close() waits no longer for its session


async def _finish_tasks() -> None:
    """Cancel and await every other task on this loop, so closing it destroys none."""
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=2)


class SyncEnvClient:
    """Synchronous wrapper: ``reset``, ``step``, ``state``, ``new_session``, ``close``, ``with``."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        # an EnvClient's own coroutines; any other client (a recording one) by its async methods
        self._native = isinstance(client, EnvClient)
        if self._native and client._sync_face is None:
            client._sync_face = self

    @property
    def async_client(self) -> Any:
        """The wrapped async client."""
        return self._client

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        if self._loop.is_closed():
            coro.close()
            raise ClientStateError("This client is closed; create a new one")
        if self._thread is None and _loop_running_here():
            self._thread = threading.Thread(target=self._loop.run_forever, name="openenv-sync", daemon=True)
            self._thread.start()
        if self._thread is not None:
            return asyncio.run_coroutine_threadsafe(coro, self._loop).result()
        with self._lock:
            return self._loop.run_until_complete(coro)

    def connect(self) -> SyncEnvClient:
        self._run(self._client._connect_entry() if self._native else _inside(self._client.connect))
        return self

    def reset(self, **kwargs: Any) -> StepResult:
        return self._run(self._client._reset_async(**kwargs) if self._native else _inside(self._client.reset, **kwargs))

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> StepResult:
        client = self._client
        if self._native:
            return self._run(client._step_async(action, timeout_s, **kwargs))
        return self._run(_inside(client.step, action, timeout_s=timeout_s, **kwargs))

    def state(self) -> Any:
        return self._run(self._client._state_async() if self._native else _inside(self._client.state))

    def web_view(self, observation: dict[str, Any] | None = None) -> dict[str, Any]:
        """The environment's own view of ``observation`` (see ``EnvClient.web_view``)."""
        return self._run(self._client._web_view_async(observation) if self._native else _inside(self._client.web_view, observation))

    def new_session(self) -> SyncEnvClient:
        """Another connected blocking session with the same server, closed with this one."""
        if not self._native:
            raise ClientStateError("new_session() needs an EnvClient underneath")
        child = self._client._spawn()
        self._client._children.append(child)
        return child.sync().connect()

    def close(self, *, timeout_s: float | None = None) -> None:
        """Close the session (and any provider) and the private loop; ``timeout_s`` bounds the
        session's close (the loop is closed either way)."""
        if self._loop.is_closed():
            return
        try:
            closing = self._client._close_entry() if self._native else _inside(self._client.close)
            self._run(closing if timeout_s is None else asyncio.wait_for(closing, timeout_s))
        finally:
            try:
                self._run(_finish_tasks())  # what a dropped socket left behind (keepalive, reader)
            finally:
                if self._thread is not None:
                    self._loop.call_soon_threadsafe(self._loop.stop)
                    self._thread.join(timeout=5)
                self._loop.close()

    def __enter__(self) -> SyncEnvClient:
        try:
            return self.connect()
        except BaseException:
            self.close()  # no ``__exit__`` follows a failed ``__enter__``: free the private loop now
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        """A client dropped without ``close()`` (common in 0.10-style scripts) still closes its session
        and loop when collected, if its loop is idle in no other thread."""
        loop = self.__dict__.get("_loop")
        if loop is None or loop.is_closed() or loop.is_running() or self.__dict__.get("_thread") is not None:
            return
        with contextlib.suppress(Exception):  # a finalizer must not raise (e.g. at interpreter exit) nor hang
            self.close(timeout_s=FINALIZER_CLOSE_TIMEOUT_S)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *args, **kwargs: self._run(attr(*args, **kwargs))
        return attr


def is_async_client(client: Any) -> bool:
    """Whether ``client.step`` is to be awaited: an ``EnvClient`` (or a recording client over one) not
    bound to its blocking face, or a client whose ``step`` is a coroutine function."""
    if isinstance(client, EnvClient):
        return not client._sync_bound()
    own = getattr(type(client), "_is_async", None)  # a recording client answers for the client it wraps
    if callable(own):
        return bool(client._is_async())
    return inspect.iscoroutinefunction(getattr(client, "step", None))
