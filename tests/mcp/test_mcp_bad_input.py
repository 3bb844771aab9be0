"""Bad input on POST /mcp, WS mcp frames and tools: a coded JSON-RPC error, HTTP 200, server stays up."""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.sync.client import connect

from tests.mcp.apps import tools_app as _app
from tests.server_utils import running_server


@pytest.fixture(scope="module")
def url():
    with running_server(_app(max_concurrent_envs=8, step_timeout_s=0.5)) as base:
        yield base


def rpc(url: str, body, **params):
    if isinstance(body, str) and params == {} and not body.startswith("tools") and "/" not in body:
        response = httpx.post(f"{url}/mcp", content=body, headers={"content-type": "application/json"})
    elif isinstance(body, str):
        response = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": body, "params": params, "id": 7})
    else:
        response = httpx.post(f"{url}/mcp", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def call(url: str, name: str, **arguments):
    return rpc(url, "tools/call", name=name, arguments=arguments)


def test_malformed_json_is_a_parse_error(url):
    reply = rpc(url, "{not json")
    assert reply["error"]["code"] == -32700
    assert reply["id"] is None


@pytest.mark.parametrize("body", [[1, 2], "a string", 5, None, [{"jsonrpc": "2.0", "method": "tools/list", "id": 1}]])
def test_not_a_request_object_is_an_invalid_request(url, body):
    reply = rpc(url, {"wrap": 1} if body is None else body) if not isinstance(body, str) else rpc(url, json.dumps(body))
    assert reply["error"]["code"] == -32600


@pytest.mark.parametrize(
    "body, names",
    [
        ({"method": "tools/list", "id": 1}, "jsonrpc"),
        ({"jsonrpc": "1.0", "method": "tools/list", "id": 1}, "jsonrpc"),
        ({"jsonrpc": "2.0", "id": 1}, "method"),
        ({"jsonrpc": "2.0", "method": "tools/list", "params": [1], "id": 1}, "params"),
        ({"jsonrpc": "2.0", "method": "tools/list", "id": {"a": 1}}, "id"),
    ],
)
def test_a_bad_envelope_names_the_member(url, body, names):
    reply = rpc(url, body)
    assert reply["error"]["code"] == -32600
    assert names in reply["error"]["message"]


def test_unknown_method(url):
    reply = rpc(url, "tools/teleport")
    assert reply["error"]["code"] == -32601
    assert "tools/teleport" in reply["error"]["message"]
    assert reply["id"] == 7


def test_unknown_tool_names_it(url):
    reply = call(url, "no_such_tool")
    assert reply["error"]["code"] == -32602
    assert "no_such_tool" in reply["error"]["message"]
    assert reply["error"]["data"]["error_type"] == "tool_not_found"


def test_missing_tool_name(url):
    reply = rpc(url, "tools/call", arguments={})
    assert reply["error"]["code"] == -32602
    assert "name" in reply["error"]["message"]


@pytest.mark.parametrize(
    "name, arguments, field",
    [
        ("add", {"a": "not a number"}, "a"),
        ("echo_message", {}, "message"),
        ("distance", {"a": {"x": 0, "y": 0}, "b": {"x": 1}}, "b.y"),
        ("convert", {"value": 1, "unit": "kelvin"}, "unit"),
        ("add", {"a": 1, "bogus": 2}, "bogus"),
    ],
)
def test_wrong_or_missing_arguments_name_the_field(url, name, arguments, field):
    reply = call(url, name, **arguments)
    error = reply["error"]
    assert error["code"] == -32602
    assert error["data"]["error_type"] == "invalid_args"
    assert f"{field}:" in error["message"]
    assert [field.split(".")] == [e["loc"] for e in error["data"]["errors"]]


def test_arguments_must_be_an_object(url):
    reply = rpc(url, {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add", "arguments": [1]}, "id": 3})
    assert reply["error"]["code"] == -32602
    assert "arguments" in reply["error"]["message"]


def test_a_raising_tool_gives_type_and_message_without_traceback_or_path(url):
    reply = call(url, "fail", reason="/home/user/secret/file.txt is missing")
    error = reply["error"]
    assert error["code"] == -32603
    assert "ValueError" in error["message"] and "refused" in error["message"]
    assert error["data"] == {"error_type": "execution_error", "exception": "ValueError"}
    text = json.dumps(reply)
    assert "Traceback" not in text and "/home/user" not in text and ".py" not in text


def test_a_tool_overrunning_the_deadline_times_out_and_the_session_lives(url):
    sid = rpc(url, "openenv/session/create")["result"]["session_id"]
    reply = rpc(url, "tools/call", name="slow", arguments={"seconds": 1.5}, session_id=sid)
    assert reply["error"]["data"]["error_type"] == "timeout"
    assert "timed out" in reply["error"]["message"]
    again = rpc(url, "tools/call", name="echo_message", arguments={"message": "still here"}, session_id=sid)
    assert again["result"]["data"] == "still here"
    assert rpc(url, "openenv/session/close", session_id=sid)["result"]["closed"] is True


def test_a_tool_overrunning_the_deadline_over_step(url):
    with connect(url.replace("http", "ws") + "/ws") as ws:
        ws.send(json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": "slow", "arguments": {"seconds": 1.5}}}))
        reply = json.loads(ws.recv(timeout=10))
        assert reply["type"] == "error" and reply["data"]["code"] == "TIMEOUT"
        ws.send(json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": "add", "arguments": {"a": 1}}}))
        reply = json.loads(ws.recv(timeout=10))
        assert reply["type"] == "observation", reply
        assert reply["data"]["observation"]["result"]["data"] == 2.0


def test_unknown_session_id_on_mcp(url):
    reply = rpc(url, "tools/list", session_id="nope")
    assert reply["error"]["code"] == -32602
    assert reply["error"]["message"] == "Unknown session_id: nope"
    assert reply["error"]["data"] == {"code": "SESSION_ERROR"}
    assert rpc(url, "openenv/session/close", session_id="nope")["error"]["code"] == -32602
    assert rpc(url, "openenv/session/close")["error"]["code"] == -32602


def test_unknown_session_id_on_ws_attach(url):
    from websockets.exceptions import ConnectionClosed

    with connect(url.replace("http", "ws") + "/ws?session_id=nope") as ws:
        ws.send(json.dumps({"type": "reset", "data": {}}))
        reply = json.loads(ws.recv(timeout=10))
        assert reply == {"type": "error", "data": {"message": "Unknown session_id: nope", "code": "SESSION_ERROR"}}
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=10)


def test_bad_mcp_frames_on_ws_keep_the_socket(url):
    with connect(url.replace("http", "ws") + "/ws") as ws:
        for data, code in [([1], -32600), ({"jsonrpc": "2.0", "method": "nope", "id": 1}, -32601), (None, -32600)]:
            ws.send(json.dumps({"type": "mcp", "data": data}))
            reply = json.loads(ws.recv(timeout=10))
            assert reply["type"] == "mcp" and reply["data"]["error"]["code"] == code
        ws.send(json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "nope"}, "id": 2}}))
        assert json.loads(ws.recv(timeout=10))["data"]["error"]["code"] == -32602
        ws.send(json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": "nope", "arguments": {}}}))
        obs = json.loads(ws.recv(timeout=10))["data"]["observation"]
        assert obs["error"] == {"error_type": "tool_not_found", "message": "Unknown tool: 'nope'"}
        ws.send(json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": "add", "arguments": {}}}))
        obs = json.loads(ws.recv(timeout=10))["data"]["observation"]
        assert obs["error"]["error_type"] == "invalid_args" and "a:" in obs["error"]["message"]


def test_the_server_keeps_serving_after_bad_input(url):
    for body in ["{", "[]", "null"]:
        rpc(url, body)
    assert httpx.get(f"{url}/health").status_code == 200
    assert call(url, "add", a=2, b=3)["result"]["data"] == 5.0


def test_reserved_tool_name_is_refused_when_the_env_is_built():
    from fastmcp import FastMCP

    from openenv.core.env_server.mcp_environment import MCPEnvironment

    class Clash(MCPEnvironment):
        def __init__(self):
            mcp = FastMCP("clash")

            @mcp.tool
            def reset() -> str:
                return "no"

            super().__init__(mcp)

        def reset(self, seed=None, episode_id=None, **kwargs):
            raise AssertionError

        def _step_impl(self, action, timeout_s=None, **kwargs):
            raise AssertionError

    with pytest.raises(ValueError, match=r"reserved names: \['reset'\]"):
        Clash()


def test_a_non_mcp_env_answers_the_jsonrpc_error_not_404():
    from openenv.envs.echo.app import app

    with running_server(app) as base:
        for method in ["tools/list", "tools/call"]:
            response = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "method": method, "params": {"name": "x"}, "id": 1})
            assert response.status_code == 200
            assert response.json()["error"] == {"code": -32603, "message": "Environment does not support MCP", "data": None}
