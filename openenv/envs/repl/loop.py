"""One background event loop that owns every worker's pipes, whoever calls.

Environments are driven from the server's loop (``*_async``), from worker
threads (sync methods) or from plain scripts. Worker I/O always happens here,
so a worker never belongs to the wrong loop and no caller's loop ever blocks
on a worker.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _run(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    loop.run_forever()


def sandbox_loop() -> asyncio.AbstractEventLoop:
    """The shared sandbox loop, started on first use in a daemon thread."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=_run, args=(loop,), name="openenv-repl-sandboxes", daemon=True).start()
            _loop = loop
        return _loop


def submit(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Schedule ``coro`` on the sandbox loop; returns a concurrent future."""
    return asyncio.run_coroutine_threadsafe(coro, sandbox_loop())


def call_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the sandbox loop and block this (non-loop) thread for its result."""
    loop = sandbox_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError("call_sync() cannot be used from the sandbox loop itself")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


async def call_async(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` run on the sandbox loop without blocking the caller's loop."""
    loop = sandbox_loop()
    if asyncio.get_running_loop() is loop:
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


@atexit.register
def _stop() -> None:
    if _loop is not None and not _loop.is_closed():
        _loop.call_soon_threadsafe(_loop.stop)
