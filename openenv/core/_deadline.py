"""``with_deadline``: await with a timeout without spawning a task (Python 3.11+)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import Any

__all__ = ["with_deadline"]

if sys.version_info >= (3, 11):

    async def with_deadline(aw: Awaitable[Any], timeout: float | None) -> Any:
        """Await ``aw``; raise ``TimeoutError`` after ``timeout`` seconds (``None``: no limit)."""
        if timeout is None:
            return await aw
        async with asyncio.timeout(timeout):
            return await aw

else:  # pragma: no cover - Python 3.10

    async def with_deadline(aw: Awaitable[Any], timeout: float | None) -> Any:
        """Await ``aw``; raise ``TimeoutError`` after ``timeout`` seconds (``None``: no limit)."""
        try:
            return await asyncio.wait_for(aw, timeout)
        except asyncio.TimeoutError as exc:
            raise TimeoutError(str(exc)) from None
