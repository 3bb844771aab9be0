"""The studio's reader process: its heaviest read-only pages served by a second process.

A run dashboard, the count and means of a big store, a token view or a streamed export spend tens
to hundreds of milliseconds of Python in a worker thread, holding the GIL. The event loop asks
for it back every switch interval, but when the holding thread is preempted by the OS (a busy
machine) the loop waits until it runs again: ``/health`` and every small request stalled behind
them (p95 18-27 ms on the 2-core bench machine). The heavy pages that only read the
store (``READ_PATHS``) are therefore answered by a reader process (``webui.studio.reader``: the same
routes and templates, the same CSRF secret, its own store connection) over a private Unix
socket; the studio's process keeps the event loop, ``/health``, Play, launching and everything
with live state. Token and origin checks run here before a request is handed over.

Until the reader answers (it starts in ~1 s), after it dies (restarted at most every
``RESTART_S``) or when a request cannot reach it, the studio serves the page itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

__all__ = ["READ_PATHS", "Offload", "ReaderProcess"]

log = logging.getLogger("openenv.studio")
READ_PATHS = re.compile(  # the pages that take tens of ms or more; list pages (a few ms) stay here:
    r"^/(?:runs/(?:trend|dashboard|compare)"  # the hop to the reader costs ~2-4 ms
    r"|episodes/(?:stats|export|compare|compare/tokens)"
    r"|episodes/[^/]+/(?:tokens|training\.jsonl|export))$")
RESTART_S = 10.0
READY_TIMEOUT_S = 60.0
_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade", b"proxy-connection",
                  b"trailer", b"date", b"server"})  # hop-by-hop, and what uvicorn adds itself
_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding the ``webui`` package


class ReaderProcess:
    """The reader process and the HTTP client that talks to it (one per studio app)."""

    def __init__(self, settings: Any, csrf_secret: str) -> None:
        self._config = pickle.dumps((settings, csrf_secret))
        self._dir = tempfile.mkdtemp(prefix="openenv-studio-")  # 0700: only this user reaches the socket
        self.socket = os.path.join(self._dir, "reader.sock")
        self._proc: subprocess.Popen[bytes] | None = None
        self._client: httpx.AsyncClient | None = None
        self._waiting: asyncio.Task[None] | None = None
        self._started_at = 0.0
        self.ready = False
        self.forwarded = 0  # requests the reader answered

    def start(self) -> ReaderProcess:
        """Spawn the reader (in a running event loop); pages go to it once it answers."""
        self._client = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=self.socket), trust_env=False,
                                         base_url="http://studio-reader", timeout=httpx.Timeout(None, connect=5.0))
        self._spawn()
        return self

    def _spawn(self) -> None:
        if self._proc is not None and self._proc.stdin is not None:  # a reader that died
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p))
        self._proc = subprocess.Popen([sys.executable, "-m", "webui.studio.reader", self.socket],
                                      stdin=subprocess.PIPE, env=env)
        assert self._proc.stdin is not None
        self._proc.stdin.write(struct.pack(">I", len(self._config)) + self._config)  # then left open: its
        self._proc.stdin.flush()  # EOF tells the reader the studio is gone
        self._started_at, self.ready = time.monotonic(), False
        self._waiting = asyncio.ensure_future(self._until_ready(self._proc))

    async def _until_ready(self, proc: subprocess.Popen[bytes]) -> None:
        assert self._client is not None
        deadline = time.monotonic() + READY_TIMEOUT_S
        while proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                if (await self._client.get("/health")).status_code == 200:
                    self.ready = True
                    return
            await asyncio.sleep(0.05)
        log.warning("the studio's reader process did not start: the studio serves every page itself")

    def available(self) -> bool:
        """Ready and alive; a reader found dead is restarted (at most every ``RESTART_S``)."""
        proc = self._proc
        if proc is None or proc.poll() is None:
            return self.ready and proc is not None
        if self.ready:
            log.warning("the studio's reader process exited (code %s); restarting it", proc.returncode)
            self.ready = False
        if time.monotonic() - self._started_at > RESTART_S:
            self._spawn()
        return False

    async def forward(self, scope: dict[str, Any], receive: Any, send: Any) -> bool:
        """Answer the request through the reader; ``False`` when it could not be reached (the
        caller serves it), before anything was sent."""
        if self._client is None or not self.available():
            return False
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP]
        request = self._client.build_request(scope["method"], target.decode("latin-1"), headers=headers)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TransportError:
            return False
        try:
            self.forwarded += 1
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP]})
            await _relay(response, receive, send)
        finally:
            await response.aclose()
        return True

    async def close(self) -> None:
        """Stop the reader (its stdin closes, then SIGTERM, then SIGKILL) and remove its socket."""
        if self._waiting is not None:
            self._waiting.cancel()
        if self._client is not None:
            await self._client.aclose()
        proc, self._proc, self.ready = self._proc, None, False
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # type: ignore[union-attr]
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, 5)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait, 5)
        shutil.rmtree(self._dir, ignore_errors=True)


async def _relay(response: httpx.Response, receive: Any, send: Any) -> None:
    """The reader's body to the client, chunk by chunk, until it ends or the client leaves (seen
    between chunks: a read is never cancelled mid-way, which anyio's socket under uvloop reports
    as an error)."""
    left = asyncio.Event()

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        left.set()

    watcher = asyncio.ensure_future(watch())
    try:
        async for chunk in response.aiter_raw():
            if left.is_set():
                return
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if not left.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        watcher.cancel()


class Offload:
    """ASGI middleware: ``GET``/``HEAD`` of ``READ_PATHS`` go to the app's reader process
    (``app.state.reader``) when it is up; everything else, and those when it is not, to the app."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (scope["type"] == "http" and scope["method"] in ("GET", "HEAD") and not scope.get("root_path")
                and READ_PATHS.match(scope["path"])):
            reader = getattr(scope["app"].state, "reader", None)
            if reader is not None and await reader.forward(scope, receive, send):
                return
        await self.app(scope, receive, send)
