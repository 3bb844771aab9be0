"""MCP sessions: create/close over /mcp, /ws?session_id= attach, and our MCPToolClient on both transports."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from websockets.sync.client import connect

from tests.mcp.apps import tools_app
from tests.server_utils import running_server


@pytest.fixture(scope="module")
def url():
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
    from tests.peers010.mcp_tools_env import ToolsEnvironment

    app = create_app(ToolsEnvironment, CallToolAction, CallToolObservation, web=False, max_concurrent_envs=4)
    with running_server(app) as base:
        yield base


def rpc(url, method, **params):
    return httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": method, "params": params, "id": 1}).json()


def test_attached_socket_shares_the_session_and_close_waits_for_it(url):
    sid = rpc(url, "openenv/session/create")["result"]["session_id"]
    rpc(url, "tools/call", name="echo_message", arguments={"message": "a"}, session_id=sid)
    ws_url = url.replace("http", "ws") + f"/ws?session_id={sid}"
    with connect(ws_url) as ws:
        ws.send(json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "call_count"}, "id": 2}}))
        assert json.loads(ws.recv(timeout=10))["data"]["result"]["data"] == 1
        ws.send(json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "openenv/session/create", "id": 3}}))
        assert json.loads(ws.recv(timeout=10))["data"]["result"] == {"session_id": sid}
        with connect(ws_url) as second:  # one socket per session
            second.send(json.dumps({"type": "state"}))
            assert json.loads(second.recv(timeout=10))["data"]["code"] == "SESSION_ERROR"
        assert rpc(url, "openenv/session/close", session_id=sid)["result"] == {"session_id": sid, "closed": False, "closing": True}
        ws.send(json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": "call_count", "arguments": {}}}))
        assert json.loads(ws.recv(timeout=10))["data"]["observation"]["result"]["data"] == 1
    for _ in range(100):  # the server closes it once the socket has gone
        if "error" in rpc(url, "tools/list", session_id=sid):
            break
        time.sleep(0.05)
    assert rpc(url, "tools/list", session_id=sid)["error"]["message"] == f"Unknown session_id: {sid}"


def test_a_detached_session_outlives_its_socket(url):
    sid = rpc(url, "openenv/session/create")["result"]["session_id"]
    with connect(url.replace("http", "ws") + f"/ws?session_id={sid}") as ws:
        ws.send(json.dumps({"type": "reset", "data": {}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"
    assert "result" in rpc(url, "tools/list", session_id=sid)
    assert rpc(url, "openenv/session/close", session_id=sid)["result"]["closed"] is True


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_our_client_on_both_transports(url, transport):
    from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction, ListToolsObservation
    from openenv.core.errors import ToolCallError
    from openenv.core.mcp_client import MCPToolClient

    with MCPToolClient(base_url=url, transport=transport).sync() as env:
        assert "echo_message" in [t.name for t in env.list_tools()]
        assert env.call_tool("echo_message", message="x") == "x"
        assert env.call_tool("call_count") == 1
        env.reset()
        assert env.call_tool("call_count") == 1  # same environment as reset/step
        assert isinstance(env.step(ListToolsAction()).observation, ListToolsObservation)
        assert env.step(CallToolAction(tool_name="add", arguments={"a": 1})).observation.result["data"] == 2.0
        with pytest.raises(ToolCallError) as info:
            env.call_tool("add", a="x")
        assert info.value.error_type == "invalid_args" and info.value.errors[0]["loc"] == ["a"]
        with pytest.raises(ToolCallError, match="ValueError: refused"):
            env.call_tool("fail", reason="r")
        sid = env.async_client.session_id
    assert rpc(url, "tools/list", session_id=sid)["error"]["data"] == {"code": "SESSION_ERROR"}


def test_a_step_mcp_env_is_answered_through_step():
    """An env without FastMCP whose action type is an MCP action (0.10's 'MCP-style' env)."""
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.mcp_types import (
        CallToolAction,
        CallToolObservation,
        ListToolsAction,
        ListToolsObservation,
        Tool,
    )
    from openenv.core.env_server.types import Observation

    class Manual(Environment):
        def reset(self, seed=None, episode_id=None, **kwargs):
            return Observation()

        def step(self, action, timeout_s=None, **kwargs):
            if isinstance(action, ListToolsAction):
                return ListToolsObservation(tools=[Tool(name="double", input_schema={"type": "object"})])
            return CallToolObservation(tool_name=action.tool_name, result={"data": action.arguments["x"] * 2})

    with running_server(create_app(Manual, CallToolAction, CallToolObservation, web=False)) as base:
        listed = rpc(base, "tools/list")["result"]["tools"]
        assert listed == [{"name": "double", "description": "", "inputSchema": {"type": "object"}}]
        assert rpc(base, "tools/call", name="double", arguments={"x": 4})["result"]["result"] == {"data": 8}


def _tools_app():
    return tools_app(max_concurrent_envs=2)


def test_after_a_server_restart_tools_wait_for_a_reset_on_the_fresh_session():
    from openenv.core.errors import ConnectionLostError, EpisodeLostError
    from openenv.core.mcp_client import MCPToolClient
    from tests.server_utils import free_port

    port = free_port()
    with running_server(_tools_app(), port=port) as base:
        env = MCPToolClient(base_url=base).sync()
        env.connect()
        env.call_tool("echo_message", message="one")
        assert env.call_tool("call_count") == 1
        first = env.async_client.session_id
    try:
        with running_server(_tools_app(), port=port):
            try:  # the call that finds the old socket dead may fail (it is never resent) ...
                env.call_tool("echo_message", message="again")
            except ConnectionLostError:
                pass
            with pytest.raises(EpisodeLostError, match="call reset"):  # ... the next reconnects, and says
                env.call_tool("echo_message", message="again")  # the old session's state is gone
            assert env.async_client.session_id not in (None, first)
            with pytest.raises(EpisodeLostError):  # until a reset, every tool call says so
                env.call_tool("call_count")
            env.reset()
            assert env.call_tool("echo_message", message="fresh") == "fresh"
            assert env.call_tool("call_count") == 1  # a fresh environment, now known to be one
    finally:
        env.close()


def test_a_dropped_socket_rejoins_the_same_session_and_keeps_its_state():
    from openenv.core.env_server.mcp_types import CallToolAction
    from openenv.core.errors import ConnectionLostError
    from openenv.core.mcp_client import MCPToolClient

    with running_server(_tools_app()) as base:
        env = MCPToolClient(base_url=base).sync()
        try:
            env.connect()
            env.reset()
            env.call_tool("echo_message", message="one")
            first = env.async_client.session_id
            env.async_client._ws.transport.abort()  # the network drops the socket; the server lives
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # the server notices the drop and detaches the socket
                sessions = httpx.get(f"{base}/sessions").json()
                if not any(s.get("attached") for s in sessions.get("sessions", [])):
                    break
                time.sleep(0.05)
            try:
                env.call_tool("echo_message", message="two")
            except ConnectionLostError:
                env.call_tool("echo_message", message="two")
            assert env.async_client.session_id == first
            assert env.call_tool("call_count") == 2  # the same environment: nothing was lost
            stepped = env.step(CallToolAction(tool_name="echo_message", arguments={"message": "three"}))
            assert stepped.observation.result["data"] == "three"  # and its episode goes on over step too
            assert env.call_tool("call_count") == 3
        finally:
            env.close()
