"""``SyncEnvClient``: the blocking face of an ``EnvClient`` (``client.sync()``).

It drives the async client on a private event loop: in the calling thread when no loop runs
there, or on a background thread when one does (a notebook, an async app).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

from openenv.core.client_types import StepResult

__all__ = ["SyncEnvClient"]


def _loop_running_here() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class SyncEnvClient:
    """Synchronous wrapper: ``reset``, ``step``, ``state``, ``close``, ``with``."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def async_client(self) -> Any:
        """The wrapped async client."""
        return self._client

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        if self._loop.is_closed():
            coro.close()
            from openenv.core.errors import ClientStateError

            raise ClientStateError("This client is closed; create a new one")
        if self._thread is None and _loop_running_here():
            self._thread = threading.Thread(target=self._loop.run_forever, name="openenv-sync", daemon=True)
            self._thread.start()
        if self._thread is not None:
            return asyncio.run_coroutine_threadsafe(coro, self._loop).result()
        with self._lock:
            return self._loop.run_until_complete(coro)

    def connect(self) -> SyncEnvClient:
        self._run(self._client.connect())
        return self

    def reset(self, **kwargs: Any) -> StepResult:
        return self._run(self._client.reset(**kwargs))

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> StepResult:
        return self._run(self._client.step(action, timeout_s=timeout_s, **kwargs))

    def state(self) -> Any:
        return self._run(self._client.state())

    def close(self) -> None:
        """Close the session (and any provider) and the private loop."""
        if self._loop.is_closed():
            return
        try:
            self._run(self._client.close())
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

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
