"""A small keep-alive HTTP/1.1 client for plain ``http://`` model servers (vLLM on the next host,
a loopback server): one request per connection at a time, idle connections reused.

httpx spends about 3 ms of CPU per request at 16 concurrent requests here (its pool scans every
connection on every request), which alone would cap a rollout at a few hundred steps/s. This path
spends a tenth of that. It handles ``Content-Length``, chunked and read-to-close bodies,
``Connection: close``, and a kept-alive connection the server closed meanwhile (sent again once
on a fresh one). ``https://`` and proxies go through httpx (``chat.py`` picks).
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

__all__ = ["HttpError", "Pool", "Response"]

MAX_HEAD = 64 * 1024
MAX_BODY = 256 * 1024 * 1024


class HttpError(OSError):
    """The exchange failed below HTTP (connection refused or lost, a malformed reply)."""


class Response:
    __slots__ = ("status", "headers", "content")

    def __init__(self, status: int, headers: dict[str, str], content: bytes) -> None:
        self.status, self.headers, self.content = status, headers, content


class _Conn:
    __slots__ = ("reader", "writer", "used")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.used = reader, writer, False

    def close(self) -> None:
        self.writer.close()


class Pool:
    """Connections to one ``http://host:port``; ``post`` is safe to call concurrently."""

    def __init__(self, url: str, headers: dict[str, str], max_idle: int = 64) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http":
            raise ValueError("the HTTP/1.1 pool serves http:// URLs only")
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host_header = parts.netloc.rsplit("@", 1)[-1]
        fixed = {"host": host_header, "connection": "keep-alive", "accept": "application/json", **headers}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self._idle: list[_Conn] = []
        self._max_idle = max_idle

    async def _connect(self) -> _Conn:
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port, limit=MAX_HEAD)
        except OSError as exc:
            raise HttpError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        return _Conn(reader, writer)

    async def post(self, body: bytes) -> Response:
        """POST ``body`` (JSON); a reused connection that turns out closed is replaced once."""
        request = b"POST " + self.path.encode() + b" HTTP/1.1\r\n" + self._head
        request += b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        while self._idle:
            conn = self._idle.pop()
            try:
                return await self._exchange(conn, request)
            except _Stale:
                conn.close()
                continue  # the server closed it while idle: nothing was processed
        return await self._exchange(await self._connect(), request)

    async def _exchange(self, conn: _Conn, request: bytes) -> Response:
        reused = conn.used
        conn.used = True
        try:
            conn.writer.write(request)
            try:
                line = await conn.reader.readuntil(b"\r\n")
            except asyncio.IncompleteReadError as exc:
                if reused and not exc.partial:
                    raise _Stale() from None
                raise
            status, headers, keep = _status(line), {}, True
            while True:
                raw = await conn.reader.readuntil(b"\r\n")
                if raw == b"\r\n":
                    break
                name, _, value = raw.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            if headers.get("connection", "").lower() == "close":
                keep = False
            content = await _body(conn.reader, headers)
            if "content-length" not in headers and "chunked" not in headers.get("transfer-encoding", ""):
                keep = False
        except (_Stale, asyncio.CancelledError):
            conn.close()
            raise
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            conn.close()
            if isinstance(exc, ConnectionResetError | BrokenPipeError) and reused:
                raise _Stale() from None
            raise HttpError(f"the exchange with {self.host}:{self.port} failed: {type(exc).__name__}: {exc}") from exc
        if keep and len(self._idle) < self._max_idle:
            self._idle.append(conn)
        else:
            conn.close()
        return Response(status, headers, content)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class _Stale(Exception):
    """A kept-alive connection the server had closed (the request never reached it)."""


def _status(line: bytes) -> int:
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise ValueError(f"not an HTTP/1.1 status line: {line[:80]!r}")
    return int(parts[1])


async def _body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        total = 0
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return b"".join(chunks)
            total += size
            if total > MAX_BODY:
                raise ValueError("reply body too large")
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = headers.get("content-length")
    if length is not None:
        n = int(length)
        if n > MAX_BODY:
            raise ValueError("reply body too large")
        return await reader.readexactly(n)
    parts, total = [], 0
    while chunk := await reader.read(65536):  # no length: the body ends with the connection
        total += len(chunk)
        if total > MAX_BODY:
            raise ValueError("reply body too large")
        parts.append(chunk)
    return b"".join(parts)
