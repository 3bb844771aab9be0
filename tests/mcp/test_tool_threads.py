"""``tool_threads.run_sync``: a sync tool body on a worker thread, as anyio's ``to_thread`` would
run it (thread, context, cancellation, ``from_thread``), and its use on the direct path only."""

from __future__ import annotations

import asyncio
import contextvars
import os
import select
import signal
import threading
import time

import anyio.from_thread
import pytest
import sniffio
from fastmcp import Context, FastMCP

from openenv.core.env_server import mcp_direct, tool_threads

pytestmark = pytest.mark.skipif(not tool_threads.AVAILABLE, reason="anyio without the worker-thread markers")

REQUEST = contextvars.ContextVar("request", default="unset")


def test_runs_on_a_worker_thread_in_the_callers_context():
    def body(x):
        try:
            library = sniffio.current_async_library()
        except sniffio.AsyncLibraryNotFoundError:
            library = None
        return x * 2, threading.current_thread().name, REQUEST.get(), library

    async def main():
        REQUEST.set("mine")
        return await tool_threads.run_sync(body, 21), threading.current_thread().name

    (value, thread, seen, library), loop_thread = asyncio.run(main())
    assert value == 42 and seen == "mine" and library is None
    assert thread == "openenv tool worker" and thread != loop_thread


def test_exceptions_reach_the_caller_as_they_were():
    class Boom(Exception):
        pass

    err = Boom("x")

    def body():
        raise err

    def stops():
        raise StopIteration

    async def main():
        with pytest.raises(Boom) as info:
            await tool_threads.run_sync(body)
        assert info.value is err
        with pytest.raises(RuntimeError, match="StopIteration"):
            await tool_threads.run_sync(stops)

    asyncio.run(main())


def test_a_slow_body_leaves_the_loop_free_and_later_calls_skip_the_wait():
    ticks = []

    async def ticker(stop):
        while not stop.is_set():
            ticks.append(time.monotonic())
            await asyncio.sleep(0.005)

    async def main():
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(stop))
        await asyncio.sleep(0)
        await tool_threads.run_sync(time.sleep, 0.3, key="slow")
        assert tool_threads._skips.get("slow") == tool_threads.SLOW_SKIPS  # noticed as slow
        await tool_threads.run_sync(time.sleep, 0.01, key="slow")
        assert tool_threads._skips["slow"] == tool_threads.SLOW_SKIPS - 1
        stop.set()
        await task

    asyncio.run(main())
    assert len(ticks) >= 10  # the loop kept running while the body slept on its thread


def test_from_thread_reaches_the_callers_loop():
    async def on_loop():
        return threading.current_thread().name

    def body():
        return anyio.from_thread.run(on_loop)

    async def main():
        tool_threads._skips["from_thread"] = 1  # await at once (a blocked loop would delay it)
        return await tool_threads.run_sync(body, key="from_thread"), threading.current_thread().name

    ran_on, loop_thread = asyncio.run(main())
    assert ran_on == loop_thread


def test_a_cancelled_caller_waits_for_the_body_then_is_cancelled():
    finished = []

    def body():
        time.sleep(0.2)
        finished.append(time.monotonic())

    async def main():
        task = asyncio.create_task(tool_threads.run_sync(body, key="cancel"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic()

    cancelled_at = asyncio.run(main())
    assert finished and finished[0] <= cancelled_at


def test_more_calls_than_workers_all_finish_and_threads_stay_bounded():
    def body(i):
        time.sleep(0.05)
        return i, threading.current_thread().name

    async def main():
        return await asyncio.gather(*(tool_threads.run_sync(body, i, key="many") for i in range(tool_threads.MAX_WORKERS + 6)))

    results = asyncio.run(main())
    assert [i for i, _ in results] == list(range(tool_threads.MAX_WORKERS + 6))
    names = [name for _, name in results]
    assert names.count("openenv tool worker") == tool_threads.MAX_WORKERS  # the rest took anyio's
    assert tool_threads._count <= tool_threads.MAX_WORKERS
    assert sum(t.name == "openenv tool worker" for t in threading.enumerate()) <= tool_threads.MAX_WORKERS


def test_idle_workers_exit(monkeypatch):
    monkeypatch.setattr(tool_threads, "IDLE_EXIT_S", 0.05)
    # workers already waiting use the old timeout: wake them once so they pick up the short one
    asyncio.run(_spin_all())
    deadline = time.monotonic() + 5
    while tool_threads._count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert tool_threads._count == 0
    assert not [t for t in threading.enumerate() if t.name == "openenv tool worker"]


async def _spin_all():
    await asyncio.gather(*(tool_threads.run_sync(time.sleep, 0.02) for _ in range(tool_threads.MAX_WORKERS)))


@pytest.mark.skipif(not mcp_direct._THREAD_HOP, reason="fastmcp's thread hop not replaced here")
def test_direct_path_uses_the_pool_and_the_full_path_keeps_anyio():
    mcp = FastMCP("threads")

    @mcp.tool
    def where(ctx: Context) -> str:
        assert ctx.fastmcp is mcp  # FastMCP's Context is current on the worker thread
        return threading.current_thread().name

    @mcp.tool(timeout=5)
    def timed() -> str:
        return threading.current_thread().name

    async def main():
        direct = await mcp_direct.call_tool(mcp, "where", {})
        full = await mcp.call_tool("where", {})
        with_timeout = await mcp_direct.call_tool(mcp, "timed", {})
        return direct.structured_content["result"], full.structured_content["result"], with_timeout.structured_content["result"]

    direct, full, with_timeout = asyncio.run(main())
    assert direct == "openenv tool worker"
    assert full.startswith("AnyIO worker thread")
    assert with_timeout.startswith("AnyIO worker thread")  # a tool timeout keeps anyio's own path


def test_a_forked_child_starts_its_own_workers():
    asyncio.run(tool_threads.run_sync(int))  # at least one idle worker here
    assert tool_threads._idle
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's idle workers have no threads here
        try:
            value = asyncio.run(asyncio.wait_for(tool_threads.run_sync(int, "7"), 5))
            os.write(write, str(value).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 10)
        assert ready and os.read(read, 16) == b"7"
    finally:
        os.close(read)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
