"""Sync tool bodies on worker threads, with fewer wake-ups than ``anyio.to_thread.run_sync``.

FastMCP runs a sync tool in an anyio worker thread so a slow one never blocks the server. Each
such call pays a checkpoint, the capacity limiter, a ``queue.Queue`` wake-up of the worker and a
``call_soon_threadsafe`` wake-up of the event loop (~75-110 µs a call here, more than a quick
tool's own work). :func:`run_sync` keeps what that promises and drops the rest:

* the function runs on a worker thread, never on the event loop, in a copy of the caller's
  context (so FastMCP's ``Context`` is current there), with no async library current, and the
  thread claimed for the caller's loop (``anyio.from_thread.run`` works as in anyio's workers);
* the loop then waits for the result on a lock for at most :data:`GRACE_S` (the body holds the
  GIL while it runs Python anyway), so a quick tool's result is taken without waking the loop
  through its selector; a call still running after that is awaited (the loop is free), and a key
  whose call outlasted the grace skips the wait for its next :data:`SLOW_SKIPS` calls;
* like anyio's default (``abandon_on_cancel=False``) a call is not abandoned: a cancelled caller
  gets its ``CancelledError`` once the function has returned;
* at most :data:`MAX_WORKERS` threads; with all busy the call takes anyio's own path. An idle
  worker exits after :data:`IDLE_EXIT_S`.

Whatever anyio internals this needs are checked at import; without them :data:`AVAILABLE` is
false and callers keep anyio's path.
"""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio.to_thread

try:  # anyio's own worker-thread markers (anyio 4.11+)
    from anyio._core._eventloop import set_current_async_library, threadlocals
    from anyio.lowlevel import current_token

    AVAILABLE = True
except ImportError:  # pragma: no cover - another anyio: callers keep anyio's path
    AVAILABLE = False

__all__ = ["AVAILABLE", "GRACE_S", "IDLE_EXIT_S", "MAX_WORKERS", "SLOW_SKIPS", "run_sync"]

GRACE_S = 0.0005
"""How long the loop waits on the lock for a result before it awaits it instead."""
SLOW_SKIPS = 64
"""Calls of a key that skip the wait after one of its calls outlasted :data:`GRACE_S`."""
MAX_WORKERS = 8
"""Threads of this pool; more calls at once take ``anyio.to_thread.run_sync``."""
IDLE_EXIT_S = 10.0
"""An idle worker's thread exits after this long (anyio's workers: 10 s too)."""

_pool_lock = threading.Lock()
_idle: deque[_Worker] = deque()
_count = 0
_skips: dict[Any, int] = {}
_last_token: tuple[Any, Any] = (None, None)


class _Worker:
    """One thread running one call at a time; handed calls through two locks."""

    def __init__(self) -> None:
        self._go = _thread.allocate_lock()
        self._go.acquire()
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self._guard = _thread.allocate_lock()
        self._job: tuple | None = None
        self._notify: tuple[asyncio.AbstractEventLoop, asyncio.Future] | None = None
        self.outcome: tuple[bool, Any] | None = None
        threading.Thread(target=self._main, name="openenv tool worker", daemon=True).start()

    def start(self, job: tuple) -> None:
        self._job = job
        self._go.release()

    def notify_when_done(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future | None:
        """A future set on ``loop`` when the call returns, or ``None`` when it already has."""
        with self._guard:
            if self.done.acquire(False):
                self.done.release()
                return None
            future = loop.create_future()
            self._notify = (loop, future)
            return future

    def _main(self) -> None:
        while self._next():
            context, fn, args, token = self._job
            self._job = None
            threadlocals.current_token = token
            threadlocals.current_cancel_scope = None
            try:
                outcome = (True, context.run(fn, *args))
            except BaseException as exc:  # handed to the caller, as anyio does
                outcome = (False, exc)
            finally:
                del threadlocals.current_token, threadlocals.current_cancel_scope
            with self._guard:
                self.outcome = outcome
                notify, self._notify = self._notify, None
                self.done.release()
            del outcome
            if notify is not None:
                loop, future = notify
                try:
                    loop.call_soon_threadsafe(_settle, future)
                except RuntimeError:  # the caller's loop closed meanwhile
                    pass

    def _next(self) -> bool:
        """Wait for a call; False when idle too long (and no caller took this worker meanwhile)."""
        global _count
        while not self._go.acquire(True, IDLE_EXIT_S):
            with _pool_lock:
                if self in _idle:
                    _idle.remove(self)
                    _count -= 1
                    return False
        return True


def _forget_workers() -> None:
    """In a fork()ed child: the workers' threads did not come along."""
    global _pool_lock, _count
    _pool_lock = threading.Lock()
    _idle.clear()
    _count = 0


os.register_at_fork(after_in_child=_forget_workers)


def _settle(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


def _take_worker() -> _Worker | None:
    global _count
    with _pool_lock:
        if _idle:
            return _idle.pop()
        if _count >= MAX_WORKERS:
            return None
        _count += 1
    try:
        return _Worker()
    except BaseException:
        with _pool_lock:
            _count -= 1
        raise


def _token(loop: asyncio.AbstractEventLoop) -> Any:
    global _last_token
    cached_loop, token = _last_token
    if cached_loop is not loop:
        token = current_token()
        _last_token = (loop, token)
    return token


async def run_sync(fn: Callable[..., Any], *args: Any, key: Any = None) -> Any:
    """``fn(*args)`` on a worker thread, as ``anyio.to_thread.run_sync`` would; ``key`` groups
    calls for the quick-or-slow guess (a tool, say). Keyword arguments: bind them with
    ``functools.partial``."""
    worker = _take_worker()
    if worker is None:
        return await anyio.to_thread.run_sync(fn, *args)
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(set_current_async_library, None)
    worker.start((context, fn, args, _token(loop)))
    skips = _skips.get(key, 0)
    if skips:
        _skips[key] = skips - 1
    cancelled = None
    if skips or not worker.done.acquire(True, GRACE_S):
        future = worker.notify_when_done(loop)
        if future is not None:
            if not skips:
                if len(_skips) > 4096:
                    _skips.clear()
                _skips[key] = SLOW_SKIPS
            cancelled = await _until_done(future)
        worker.done.acquire()
    ok, value = worker.outcome
    worker.outcome = None
    with _pool_lock:
        _idle.append(worker)
    if cancelled is not None:
        raise cancelled
    if ok:
        return value
    if isinstance(value, StopIteration):  # as anyio: it cannot travel through a coroutine
        raise RuntimeError("coroutine raised StopIteration") from value
    raise value


async def _until_done(future: asyncio.Future) -> BaseException | None:
    """Await ``future`` through any cancellation (the call is not abandoned, as with anyio's
    ``abandon_on_cancel=False``); the cancellation, if one came, to raise afterwards."""
    cancelled: BaseException | None = None
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError as exc:
            cancelled = exc
    return cancelled
