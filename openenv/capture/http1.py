"""A lean HTTP/1.1 client for the capture proxy's calls to its engine: keep-alive connections to
one origin (``http`` or ``https``), whole bodies in and out, responses parsed by ``httptools``.

httpx costs the proxy about a millisecond of CPU per call (request and response models, header
normalisation, its pool's bookkeeping, anyio's stream layers); at 64 concurrent rollouts on a
small machine that CPU is queueing delay. Here a call is a ``transport.write`` and a parser fed
from ``data_received``: a connection is an ``asyncio.Protocol``, idle ones wait on a stack (a
closed one is dropped when it closes, so nothing is polled), and a reused connection that the
engine closed before answering anything is retried once on a fresh one.

    pool = Http1Pool("http://127.0.0.1:8000")
    status, headers, body = await pool.request(b"POST", "/v1/chat/completions", [(b"Content-Type", b"application/json")],
                                               b"{...}", timeout_s=600)
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any
from urllib.parse import urlsplit

import httptools

__all__ = ["Http1Pool"]


class _Connection(asyncio.Protocol):
    """One keep-alive connection; one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[tuple[int, list[tuple[bytes, bytes]], bytes, bool]] | None = None
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._received = False  # any byte of the current response
        self._framed = False  # the response says where its body ends (length or chunked)

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if self._received and not self._framed and exc is None:  # the body ran to the connection's end
            waiter.set_result((self._parser.get_status_code(), self._headers, b"".join(self._body), False))
        else:
            waiter.set_exception(_Dropped(self._received, exc))

    def data_received(self, data: bytes) -> None:
        self._received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if self._waiter is not None and not self._waiter.done():
                self._waiter.set_exception(ConnectionError(f"malformed HTTP response: {exc}"))
            self.close()

    # httptools callbacks
    def on_message_begin(self) -> None:
        self._headers, self._body = [], []

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length" or (lower == b"transfer-encoding" and b"chunked" in value.lower()):
            self._framed = True

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result((self._parser.get_status_code(), self._headers, b"".join(self._body),
                               self._parser.should_keep_alive()))

    def send(self, data: bytes) -> asyncio.Future[tuple[int, list[tuple[bytes, bytes]], bytes, bool]]:
        assert self.transport is not None
        self._waiter = asyncio.get_running_loop().create_future()
        self._received = self._framed = False
        self.transport.write(data)
        return self._waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class _Dropped(ConnectionError):
    def __init__(self, received: bool, exc: Exception | None) -> None:
        super().__init__(f"the server closed the connection{' mid-response' if received else ' before answering'}"
                         + (f": {exc}" if exc else ""))
        self.received = received


class Http1Pool:
    """Keep-alive HTTP/1.1 connections to the origin of ``base_url`` (at most ``max_connections``)."""

    def __init__(self, base_url: str, *, ssl_context: ssl.SSLContext | None = None, connect_timeout_s: float = 30.0,
                 max_connections: int = 512) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = url.hostname
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl = (ssl_context or ssl.create_default_context()) if url.scheme == "https" else None
        default = 443 if url.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = (host if self.port == default else f"{host}:{self.port}").encode("idna")
        self._connect_timeout = connect_timeout_s
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self._slots = asyncio.Semaphore(max_connections)

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(loop.create_connection(
            _Connection, self.host, self.port, ssl=self._ssl, server_hostname=self.host if self._ssl else None),
            self._connect_timeout)
        return conn

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
        return None

    async def request(self, method: bytes, target: str, headers: list[tuple[bytes, bytes]], body: bytes | None,
                      *, timeout_s: float) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Send one request, return ``(status, headers, body)``; ``OSError`` (``ConnectionError``,
        ``TimeoutError``) when the engine cannot be reached or stops mid-way."""
        lines = [method, b" ", target.encode(), b" HTTP/1.1\r\nHost: ", self.host_header, b"\r\n"]
        for name, value in headers:
            lines += (name, b": ", value, b"\r\n")
        if body is not None:
            lines += (b"Content-Length: ", str(len(body)).encode(), b"\r\n\r\n", body)
        else:
            lines.append(b"\r\n")
        data = b"".join(lines)
        async with self._slots:
            for attempt in (0, 1):
                conn = self._take_idle()
                reused = conn is not None
                if conn is None:
                    conn = await self._connect()
                self._busy.add(conn)
                keep = False
                try:
                    status, got, content, keep = await asyncio.wait_for(conn.send(data), timeout_s)
                    return status, got, content
                except _Dropped as exc:
                    if reused and not exc.received and attempt == 0:
                        continue  # the engine closed an idle connection as we reused it
                    raise
                finally:
                    self._busy.discard(conn)
                    if keep and not conn.closed:
                        self._idle.append(conn)
                    else:
                        conn.close()
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        for conn in [*self._idle, *self._busy]:
            conn.close()
        self._idle.clear()
        self._busy.clear()
