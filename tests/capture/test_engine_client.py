"""The engine client (``openenv.capture.http1`` under ``EngineClient``): concurrent calls on
keep-alive connections that are reused and all closed; chunked and connection-delimited bodies;
an idle connection the engine closed is retried once; an engine that is gone or silent is an
``UpstreamError``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from openenv.capture.engine import EngineClient, UpstreamError
from openenv.capture.http1 import Http1Pool

BODY = {"model": "wait-200", "messages": [{"role": "user", "content": "hi"}], "logprobs": True,
        "return_token_ids": True, "top_logprobs": 0}


def test_concurrent_calls_reuse_their_connections_and_all_close(engine_url: str) -> None:
    async def run() -> tuple[list, int, int, int]:
        client = EngineClient(engine_url)
        replies = await asyncio.gather(*(client.chat(dict(BODY)) for _ in range(12)))
        opened = len(client._pool._idle)
        again = await asyncio.gather(*(client.chat(dict(BODY)) for _ in range(12)))
        reopened = len(client._pool._idle)
        pool = client._pool
        await client.aclose()
        return [*replies, *again], opened, reopened, len(pool._idle) + len(pool._busy)

    replies, opened, reopened, after = asyncio.run(run())
    assert all(r.sampled_ids and r.logprobs for r in replies)
    assert opened == 12 and reopened == 12  # one per call in flight, reused by the next calls
    assert after == 0


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _raw_server(handle: Handler) -> tuple[asyncio.AbstractServer, str]:
    async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handle(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(closing, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def _stop(server: asyncio.AbstractServer) -> None:
    server.close()
    await asyncio.sleep(0.1)  # the handlers see their clients go and close their ends


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
    return head + await reader.readexactly(length)


def test_chunked_and_connection_delimited_bodies() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n")
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"b\": 2}")
        await writer.drain()
        writer.close()

    async def run() -> list[tuple[int, bytes]]:
        server, url = await _raw_server(handle)
        pool = Http1Pool(url)
        out = [(await pool.request(b"POST", "/x", [], b"{}", timeout_s=10))[::2] for _ in range(2)]
        await pool.aclose()
        await _stop(server)
        return out

    assert asyncio.run(run()) == [(200, b'{"a":1}'), (200, b'{"b": 2}')]


def test_an_idle_connection_the_engine_closed_is_retried_once() -> None:
    connections = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        await reader.read(1)  # the next request arrives: hang up without answering it
        writer.close()

    async def run() -> list[bytes]:
        server, url = await _raw_server(handle)
        pool = Http1Pool(url)
        out = [(await pool.request(b"GET", "/", [], None, timeout_s=10))[2] for _ in range(2)]
        await pool.aclose()
        await _stop(server)
        return out

    assert asyncio.run(run()) == [b"ok", b"ok"]
    assert len(connections) == 2


def test_unreachable_and_silent_engines_are_upstream_errors() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async def run() -> tuple[str, str]:
        server, url = await _raw_server(silent)
        client = EngineClient(url + "/v1", timeout_s=0.3)
        with pytest.raises(UpstreamError) as slow:
            await client.chat(dict(BODY))
        await client.aclose()
        await _stop(server)
        gone = EngineClient(url + "/v1")
        with pytest.raises(UpstreamError) as refused:
            await gone.chat(dict(BODY))
        await gone.aclose()
        return str(slow.value), str(refused.value)

    slow, refused = asyncio.run(run())
    assert "unreachable: TimeoutError" in slow and "unreachable" in refused
