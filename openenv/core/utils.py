"""Small helpers 0.10's public API has under ``openenv.core.utils``."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["convert_to_ws_url", "hf_space_subdomain", "run_async_safely"]

T = TypeVar("T")


def run_async_safely(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from any context and return its result.

    Without a running loop it is ``asyncio.run(coro)``; inside one (a notebook, an async
    framework) the coroutine runs on a fresh loop in a helper thread, and this call blocks
    until it finishes. Exceptions propagate unchanged.
    """
    if asyncio._get_running_loop() is None:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def _run() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=_run, name="openenv-run-async", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def convert_to_ws_url(url: str) -> str:
    """``http(s)://`` becomes ``ws(s)://``; a bare ``host:port`` gets ``ws://``; no trailing slash."""
    url = url.rstrip("/")
    for http, ws in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(http):
            return ws + url[len(http):]
    return url if url.startswith(("ws://", "wss://")) else "ws://" + url


def hf_space_subdomain(repo_id: str) -> str:
    """A Space ``owner/name``'s subdomain: lowercased, every char outside ``[a-z0-9]`` as ``-``."""
    return re.sub(r"[^a-z0-9]", "-", repo_id.lower())
