"""One event loop that owns every worker's pipes, whoever calls.

Environments are driven from the server's loop (``*_async``), from worker
threads (sync methods) or from plain scripts. Worker I/O always happens on the
sandbox loop, so a worker never belongs to the wrong loop and no caller's loop
ever blocks on a worker. By default that is a background loop in a daemon
thread; a server may lend its own loop instead (:func:`adopt_running_loop`,
done by the REPL app's lifespan), which saves two thread wake-ups per cell.
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
_owned: asyncio.AbstractEventLoop | None = None  # the background loop we started (not a lent one)


def _run(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    loop.run_forever()


def sandbox_loop() -> asyncio.AbstractEventLoop:
    """The shared sandbox loop, started on first use in a daemon thread."""
    global _loop, _owned
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=_run, args=(loop,), name="openenv-repl-sandboxes", daemon=True).start()
            _loop = _owned = loop
        return _loop


def adopt_running_loop(*, background_unused: bool = False) -> bool:
    """Make the running loop the sandbox loop; True if adopted.

    Refused while another loop serves workers: a lent loop, or the background loop unless
    ``background_unused`` says no worker belongs to it (it then idles on, finishing its
    clean-ups). The adopter must call :func:`release_adopted_loop` before its loop stops;
    until then sync callers in other threads reach the workers through it.
    """
    global _loop
    with _lock:
        if _loop is not None and not _loop.is_closed() and not (_loop is _owned and background_unused):
            return False
        _loop = asyncio.get_running_loop()
        return True


def release_adopted_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Stop lending ``loop``: the next caller starts a background loop of its own."""
    global _loop
    with _lock:
        if _loop is loop:
            _loop = None


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
    if _owned is not None and not _owned.is_closed():
        _owned.call_soon_threadsafe(_owned.stop)
