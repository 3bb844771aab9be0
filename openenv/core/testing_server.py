"""Serve an ASGI app on 127.0.0.1 in a background thread, for checks that need a real server."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from openenv.core.errors import OpenEnvError

__all__ = ["serve_in_thread"]

START_TIMEOUT_S = 30.0


@contextlib.contextmanager
def serve_in_thread(app: Any, *, start_timeout_s: float = START_TIMEOUT_S) -> Iterator[str]:
    """Run ``app`` with uvicorn on a free loopback port; yields ``http://127.0.0.1:<port>``."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", ws_per_message_deflate=False, timeout_graceful_shutdown=5
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="openenv-check")
    thread.start()
    try:
        deadline = time.monotonic() + start_timeout_s
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise OpenEnvError("the app did not start serving", code="SERVER_START_FAILED")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
