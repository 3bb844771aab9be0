"""``with_deadline``: await with a timeout without spawning a task (Python 3.11+)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import Any

__all__ = ["with_deadline"]

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
