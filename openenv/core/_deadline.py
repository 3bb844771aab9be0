"""``with_deadline``: await with a timeout without spawning a task (Python 3.11+); and
``SerialDeadline``: the same for calls made one at a time, with one timer for all of them."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import Any

__all__ = ["SerialDeadline", "with_deadline"]

if sys.version_info >= (3, 11):

    async def with_deadline(aw: Awaitable[Any], timeout: float | None) -> Any:
        """Await ``aw``; raise ``TimeoutError`` after ``timeout`` seconds (``None``: no limit).

        A lighter ``asyncio.timeout``: one timer handle and no context-manager object, since
        this sits on every environment call.
        """
        if timeout is None:
            return await aw
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:  # pragma: no cover - always called from a task
            return await asyncio.wait_for(aw, timeout)
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        handle = loop.call_later(timeout, expire)
        try:
            return await aw
        except asyncio.CancelledError:
            if expired and task.uncancel() == 0:
                raise TimeoutError from None
            raise
        finally:
            handle.cancel()

else:  # pragma: no cover - Python 3.10

    async def with_deadline(aw: Awaitable[Any], timeout: float | None) -> Any:
        """Await ``aw``; raise ``TimeoutError`` after ``timeout`` seconds (``None``: no limit)."""
        try:
            return await asyncio.wait_for(aw, timeout)
        except asyncio.TimeoutError as exc:
            raise TimeoutError(str(exc)) from None


class SerialDeadline:
    """Deadlines for calls made one at a time (say, under a session's lock), with one timer.

    ``with_deadline`` arms and cancels a timer per call, which costs more than a quick call
    itself (~3.5 µs under uvloop). Here a timer is armed only when none is, for the running
    call's due time; when it fires it cancels the call if that call is overdue, re-arms for a
    newer call that is not yet due, and stays unarmed while idle. So a stream of quick calls
    arms about one timer per ``timeout``; a call with a shorter timeout than the armed timer
    re-arms it. A call made while another is still running gets a timer of its own
    (``with_deadline``), so overlapping calls stay correct, only slower.
    """

    __slots__ = ("_handle", "_loop", "_armed_for", "_task", "_due", "_expired")

    def __init__(self) -> None:
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the timer is armed on
        self._armed_for = 0.0
        self._task: asyncio.Task[Any] | None = None
        self._due = 0.0
        self._expired = False

    async def run(self, aw: Awaitable[Any], timeout: float | None) -> Any:
        """Await ``aw``; raise ``TimeoutError`` after ``timeout`` seconds (``None``: no limit)."""
        if timeout is None or self._task is not None or sys.version_info < (3, 11):
            return await with_deadline(aw, timeout)
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:  # pragma: no cover - always called from a task
            return await with_deadline(aw, timeout)
        due = loop.time() + timeout
        self._task, self._due, self._expired = task, due, False
        handle = self._handle
        if handle is None or due < self._armed_for or self._loop is not loop:
            if handle is not None and self._loop is loop:
                handle.cancel()  # (another loop's timer is left to fire there and do nothing)
            self._handle, self._loop, self._armed_for = loop.call_at(due, self._fire, loop), loop, due
        try:
            return await aw
        except asyncio.CancelledError:
            if self._expired and task.uncancel() == 0:
                raise TimeoutError from None
            raise
        finally:
            self._task = None
            self._expired = False

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        if loop is not self._loop:  # armed on a loop this object has since left
            return
        self._handle = None
        task = self._task
        if task is None:  # idle: the next call arms a timer again
            return
        if loop.time() < self._due:  # a newer call, not yet due
            self._handle, self._armed_for = loop.call_at(self._due, self._fire, loop), self._due
            return
        self._expired = True
        task.cancel()

    def cancel(self) -> None:
        """Disarm (the session or client is closing); a timer of another loop is left to no-op."""
        handle, self._handle = self._handle, None
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if handle is not None and running is self._loop:
            handle.cancel()
        self._loop = None
