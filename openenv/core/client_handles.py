"""Results that serve sync and async callers alike.

``AutoResult`` is what ``EnvClient.reset()`` (and ``step``, ``state``...) return where an event loop
runs and the client is not bound to its own blocking face: a coroutine to ``await`` (or hand to
``asyncio.create_task``), which also resolves on first attribute access for code that did not
await it (a notebook cell). ``BootstrapHandle`` is what ``from_docker_image``/``from_env`` return:
``await handle`` for an async client, ``handle.sync()`` for a blocking one; it starts nothing until
one of them is used, and only once.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator
from typing import Any

from openenv.core.errors import ClientStateError

__all__ = ["AutoResult", "BootstrapHandle"]


class _LazyCoroutine(Coroutine):
    """A coroutine made by ``factory`` on first use (no "never awaited" warning if it never is)."""

    def __init__(self, factory: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        self._factory = factory
        self._coro: Coroutine[Any, Any, Any] | None = None

    def _ensure(self) -> Coroutine[Any, Any, Any]:
        if self._coro is None:
            self._coro = self._factory()
        return self._coro

    def __await__(self) -> Generator[Any, None, Any]:
        return self._ensure().__await__()

    def send(self, value: Any) -> Any:
        return self._ensure().send(value)

    def throw(self, *args: Any) -> Any:
        return self._ensure().throw(*args)

    def close(self) -> None:
        if self._coro is not None:
            self._coro.close()


class AutoResult(_LazyCoroutine):
    """Awaitable result that resolves synchronously (on the client's own loop) when read instead."""

    def __init__(self, factory: Callable[[], Coroutine[Any, Any, Any]], resolve: Callable[[], Any]) -> None:
        super().__init__(factory)
        self._resolve = resolve
        self._done = False
        self._value: Any = None

    def result(self) -> Any:
        """Block for the value (what attribute access does)."""
        if not self._done:
            if self._coro is not None:
                raise ClientStateError("This result is already being awaited; await it instead")
            self._value, self._done = self._resolve(), True
        return self._value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.result(), name)

    def __repr__(self) -> str:
        return repr(self._value) if self._done else "<AutoResult pending: await it or read an attribute>"


class BootstrapHandle(_LazyCoroutine):
    """``await`` it for a connected async client, or call ``.sync()`` for a blocking one."""

    def __init__(self, start_async: Callable[[], Coroutine[Any, Any, Any]], start_sync: Callable[[], Any]) -> None:
        super().__init__(self._claimed(start_async))
        self._start_sync = start_sync
        self._used = False

    def _claimed(self, start_async: Callable[[], Coroutine[Any, Any, Any]]) -> Callable[[], Coroutine[Any, Any, Any]]:
        def factory() -> Coroutine[Any, Any, Any]:
            self._claim()
            return start_async()

        return factory

    def _claim(self) -> None:
        if self._used:
            raise ClientStateError("This handle already started its environment; call the factory again")
        self._used = True

    def sync(self) -> Any:
        """Start and connect, blocking; returns a ``SyncEnvClient`` that stops what it started on close."""
        self._claim()
        return self._start_sync()

    def __repr__(self) -> str:
        return "<BootstrapHandle pending: await it or call .sync()>"
