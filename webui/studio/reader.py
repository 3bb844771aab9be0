"""The studio's reader process (``webui.studio.offload``): the studio's routes over a Unix socket,
for the read-only pages the studio hands it. Started by the studio, never by hand:

    python -m webui.studio.reader SOCKET   # stdin: length-prefixed pickle of (settings, csrf secret)

It exits when its stdin closes (the studio stopped or died).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import struct
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

__all__ = ["create_reader_app"]

NICE = 5  # a lower CPU priority than the studio's process


def create_reader_app(settings: Any, csrf_secret: str) -> FastAPI:
    """The studio's routes with only the store behind them (no launcher, plays or catalogue: the
    pages handed over read nothing else), no token or origin checks (the studio ran them)."""
    from openenv.recording import EpisodeStore
    from webui.studio.app import add_routes
    from webui.studio.state import Studio

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = EpisodeStore(settings.database_target)
        app.state.studio = Studio(settings, store, None, None, None, None)  # type: ignore[arg-type]
        try:
            yield
        finally:
            store.close()

    app = FastAPI(lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    add_routes(app, settings, csrf_secret)
    return app


def _exit_with_parent() -> None:
    sys.stdin.buffer.read()  # returns at EOF: the studio closed the pipe or is gone
    os.kill(os.getpid(), signal.SIGTERM)


def main() -> None:
    import uvicorn

    (size,) = struct.unpack(">I", sys.stdin.buffer.read(4))
    settings, secret = pickle.loads(sys.stdin.buffer.read(size))  # from the studio that spawned us
    with contextlib.suppress(OSError):  # the studio's own process (its loop, /health, Play) comes first
        os.nice(NICE)
    threading.Thread(target=_exit_with_parent, name="studio-watch", daemon=True).start()
    uvicorn.run(create_reader_app(settings, secret), uds=sys.argv[1], log_level="warning", lifespan="on",
                timeout_graceful_shutdown=2)


if __name__ == "__main__":
    main()
