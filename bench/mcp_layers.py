"""Where one MCP ``tools/call`` spends its time in the server, layer by layer, in process.

Drives the app of ``tests/peers010/mcp_tools_env.py`` on uvloop without sockets: a whole
``POST /mcp`` through the ASGI app, a whole ``{"type": "mcp"}`` frame through ``/ws``, then each
layer inside (``McpRpc``, ``MCPEnvironment.mcp_call``, the tool call, FastMCP's pieces), with the
direct path on and off. Prints the minimum over ``--reps`` batches of ``--calls`` calls (the
machine is shared: the minimum is the least disturbed figure) and the load average.

Usage: .venv/bin/python bench/mcp_layers.py [--reps 7] [--calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio.to_thread
import uvloop

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/, whose mcp.py would shadow the mcp package
sys.path.append(str(ROOT / "tests" / "peers010"))

import mcp_tools_env  # noqa: E402
from fastmcp.server.context import Context  # noqa: E402
from fastmcp.server.telemetry import server_span  # noqa: E402

from openenv.core.env_server import mcp_direct, tool_threads  # noqa: E402

ARGS = {"message": "hi"}


async def _asgi_ws(app, frame: str) -> Callable[[], Awaitable[object]]:
    """A connected ``/ws`` socket on ``app``; returns one round trip of ``frame``."""
    inbox: asyncio.Queue = asyncio.Queue()
    outbox: asyncio.Queue = asyncio.Queue()
    scope = {"type": "websocket", "path": "/ws", "raw_path": b"/ws", "root_path": "", "headers": [],
             "query_string": b"", "scheme": "ws", "server": ("127.0.0.1", 1), "client": ("127.0.0.1", 2),
             "subprotocols": [], "state": {}}
    inbox.put_nowait({"type": "websocket.connect"})
    asyncio.ensure_future(app(scope, inbox.get, outbox.put))
    assert (await outbox.get())["type"] == "websocket.accept"

    async def round_trip() -> object:
        inbox.put_nowait({"type": "websocket.receive", "text": frame})
        return await outbox.get()

    return round_trip


async def layers() -> dict[str, Callable[[], Awaitable[object]]]:
    app = mcp_tools_env.app
    server = app.state.env_server
    rpc = server.mcp
    created = await rpc.handle_body(b'{"jsonrpc":"2.0","method":"openenv/session/create","id":0}')
    sid = created["result"]["session_id"]
    call = {"jsonrpc": "2.0", "method": "tools/call", "id": 1, "params": {"name": "echo_message", "arguments": ARGS}}
    body = json.dumps({**call, "params": {**call["params"], "session_id": sid}}).encode()
    scope = {"type": "http", "method": "POST", "path": "/mcp", "raw_path": b"/mcp", "root_path": "",
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
             "query_string": b"", "http_version": "1.1", "scheme": "http", "server": ("127.0.0.1", 1),
             "client": ("127.0.0.1", 2), "state": {}}

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(_message: dict) -> None:
        return None

    env = server.sessions.get(sid).env
    mcp = env.mcp_server
    tool = await mcp.get_tool("echo_message")
    ws_round_trip = await _asgi_ws(app, json.dumps({"type": "mcp", "data": call}))

    async def context_and_span() -> None:
        async with Context(fastmcp=mcp):
            with server_span("tools/call echo_message", "tools/call", mcp.name, "tool", "echo_message") as span:
                span.set_attributes(tool.get_span_attributes())

    async def nothing() -> None:
        return None

    async def task_and_wait() -> None:
        await asyncio.wait((asyncio.ensure_future(nothing()),), timeout=30)

    async def checks() -> None:
        mcp_direct.direct_tool(mcp, "echo_message")

    return {
        "POST /mcp through the ASGI app": lambda: app(dict(scope), receive, send),
        "WS mcp frame through /ws": ws_round_trip,
        "McpRpc.handle_body": lambda: rpc.handle_body(body),
        "MCPEnvironment.mcp_call": lambda: env.mcp_call("echo_message", ARGS, 30.0),
        "mcp_direct.call_tool": lambda: mcp_direct.call_tool(mcp, "echo_message", ARGS),
        "  FastMCP.call_tool (full path)": lambda: mcp.call_tool("echo_message", ARGS),
        "  FastMCP.get_tool (full lookup)": lambda: mcp.get_tool("echo_message"),
        "  direct_tool (the checks)": checks,
        "  Context + server_span": context_and_span,
        "  tool._run (validate, run, convert)": lambda: tool._run(ARGS),
        "  anyio worker-thread hop": lambda: anyio.to_thread.run_sync(int),  # a no-op sync call
        "  tool_threads hop (direct path)": lambda: tool_threads.run_sync(int, key="bench"),
        "  task + asyncio.wait (deadline)": task_and_wait,
    }


async def measure(reps: int, calls: int) -> None:
    table = await layers()
    direct_sensitive = {"POST /mcp through the ASGI app", "WS mcp frame through /ws", "McpRpc.handle_body",
                        "MCPEnvironment.mcp_call", "mcp_direct.call_tool"}
    best: dict[str, float] = {}
    for _ in range(reps):
        for on in (True, False):
            mcp_direct._ENABLED = on
            for label, fn in table.items():
                if not on and label not in direct_sensitive:
                    continue
                key = label if on else label + " [direct off]"
                began = time.perf_counter()
                for _ in range(calls):
                    await fn()
                per_call = (time.perf_counter() - began) / calls * 1e6
                best[key] = min(best.get(key, per_call), per_call)
    mcp_direct._ENABLED = mcp_direct.enabled()
    print(f"per-call cost in process, min of {reps} x {calls} calls; load avg {os.getloadavg()[0]:.2f}")
    for label in table:
        off = best.get(label + " [direct off]")
        print(f"{label:40}{best[label]:8.1f} us" + (f"   direct off {off:8.1f} us" if off is not None else ""))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    uvloop.run(measure(args.reps, args.calls))


if __name__ == "__main__":
    main()
