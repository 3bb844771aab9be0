"""A tool removed and re-added under the same name with another signature (taking a ``Context`` or
not) is called the way its new signature needs: through the environment's client session when it
takes a ``Context``, else directly. Whether a tool takes one is known per tool object, not per name."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastmcp import Context, FastMCP
from fastmcp.server.dependencies import get_context
from fastmcp.server.middleware import Middleware
from websockets.sync.client import connect

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State
from tests.server_utils import running_server


def plain_probe() -> str:
    """No Context: called without an MCP request."""
    return "plain, in a session" if get_context().request_context is not None else "plain"


async def context_probe(ctx: Context) -> str:
    """Takes a Context: logs, keeps state, and sees the session's request."""
    await ctx.info("probe")
    count = (await ctx.get_state("count")) or 0
    await ctx.set_state("count", count + 1)
    return f"context {count + 1}" if ctx.request_context is not None else "context, no request"


class Counted(Middleware):
    """A ``tools/call`` hook: the server takes FastMCP's full path."""

    async def on_call_tool(self, context, call_next):
        return await call_next(context)


class SwappingEnv(MCPEnvironment):
    """``probe`` swaps between a plain tool and one taking a Context each time ``swap`` is called."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    MIDDLEWARE = False

    def __init__(self) -> None:
        mcp = FastMCP("swapping")
        if self.MIDDLEWARE:
            mcp.add_middleware(Counted())
        mcp.tool(name="probe")(plain_probe)
        versions = [context_probe, plain_probe]

        @mcp.tool
        def swap() -> str:
            mcp.local_provider.remove_tool("probe")
            fn = versions.pop(0)
            versions.append(fn)
            mcp.tool(name="probe")(fn)
            return fn.__name__

        super().__init__(mcp)

    def reset(self, seed=None, episode_id=None, **kwargs):
        return Observation(done=False, reward=0.0)

    def _step_impl(self, action, timeout_s=None, **kwargs):
        return Observation(done=False, reward=0.0)

    @property
    def state(self):
        return State(step_count=0)


def _rpc(sock: Any, rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    sock.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}))
    reply = json.loads(sock.recv(timeout=10))
    assert "error" not in reply, reply
    return reply["result"]


def _call(sock: Any, rid: int, name: str) -> Any:
    return _rpc(sock, rid, "tools/call", {"name": name, "arguments": {}})["data"]


@pytest.mark.parametrize("middleware", [False, True], ids=["plain-server", "call-tool-middleware"])
def test_a_tool_replaced_under_its_name_is_called_as_its_new_signature_needs(monkeypatch, middleware):
    monkeypatch.setattr(SwappingEnv, "MIDDLEWARE", middleware)
    app = create_app(SwappingEnv, CallToolAction, CallToolObservation, env_name="swapping", web=False)
    with running_server(app) as url, connect(url.replace("http", "ws", 1) + "/mcp", open_timeout=10) as ws:
        assert _call(ws, 1, "probe") == "plain"
        assert _call(ws, 2, "swap") == "context_probe"
        assert _call(ws, 3, "probe") == "context 1"  # learnt from the call
        assert _call(ws, 4, "probe") == "context 2"  # the session's state persists
        assert _call(ws, 5, "swap") == "plain_probe"
        assert _call(ws, 6, "probe") == "plain"
        assert _call(ws, 7, "swap") == "context_probe"
        assert "probe" in {tool["name"] for tool in _rpc(ws, 8, "tools/list")["tools"]}  # learnt from the listing
        assert _call(ws, 9, "probe") == "context 3"
        assert _call(ws, 10, "swap") == "plain_probe"
        _rpc(ws, 11, "tools/list")
        assert _call(ws, 12, "probe") == "plain"
