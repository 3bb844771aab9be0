"""The WebSocket ``/mcp`` (0.10's endpoint): JSON-RPC frames on one environment per connection,
bad frames answered with their error on a socket that stays open, capacity refused with a code."""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.mcp.apps import tools_app as _app
from tests.server_utils import running_server


@pytest.fixture(scope="module")
def url():
    with running_server(_app(max_concurrent_envs=2, max_message_bytes=4096)) as base:
        yield base


def _ws(url: str):
    return connect(url.replace("http://", "ws://") + "/mcp", compression=None, open_timeout=10)


def _rpc(sock, payload) -> dict:
    sock.send(payload if isinstance(payload, str) else json.dumps(payload))
    return json.loads(sock.recv(timeout=10))


def _call(rid: int, name: str, **arguments) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def test_tools_on_one_environment_per_connection(url):
    with _ws(url) as one, _ws(url) as two:
        tools = _rpc(one, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"]
        assert "echo_message" in {t["name"] for t in tools}
        for rid in (2, 3):
            assert _rpc(one, _call(rid, "echo_message", message="hi"))["result"]["data"] == "hi"
        assert _rpc(one, _call(4, "call_count"))["result"]["data"] == 2
        assert _rpc(two, _call(5, "call_count"))["result"]["data"] == 0  # its own environment
        own = _rpc(one, {"jsonrpc": "2.0", "id": 6, "method": "openenv/session/create"})["result"]["session_id"]
        listed = {s["session_id"]: s["kind"] for s in httpx.get(url + "/sessions").json()["sessions"]}
        assert listed[own] == "mcp-ws"
        refused = _rpc(one, {"jsonrpc": "2.0", "id": 7, "method": "openenv/session/close", "params": {"session_id": own}})
        assert refused["error"]["code"] == -32600
    assert httpx.get(url + "/sessions").json()["active"] == 0  # both closed with their sockets


@pytest.mark.parametrize(("frame", "code"), [
    ("{not json", -32700),
    ("[1, 2]", -32600),
    ('{"jsonrpc": "2.0", "id": 1}', -32600),
    ('{"jsonrpc": "2.0", "id": 1, "method": "nope"}', -32601),
    (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope"}}), -32602),
    (json.dumps(_call(1, "add", a="x")), -32602),
    (json.dumps({"x": "a" * 5000}), -32600),
])
def test_bad_frames_get_their_error_and_the_socket_stays_open(url, frame, code):
    with _ws(url) as sock:
        reply = _rpc(sock, frame)
        assert reply["jsonrpc"] == "2.0" and reply["error"]["code"] == code, reply
        assert "Traceback" not in json.dumps(reply)
        assert _rpc(sock, _call(9, "echo_message", message="still"))["result"]["data"] == "still"


def test_a_full_server_refuses_with_a_code_and_hangs_up(url):
    with _ws(url) as one, _ws(url) as two:
        assert _rpc(one, _call(1, "call_count"))["result"]["data"] == 0
        assert _rpc(two, _call(1, "call_count"))["result"]["data"] == 0
        with _ws(url) as third:
            reply = json.loads(third.recv(timeout=10))
            assert reply["error"]["code"] == -32000 and reply["error"]["data"]["code"] == "CAPACITY_REACHED"
            with pytest.raises(ConnectionClosed):
                third.recv(timeout=10)
        assert _rpc(one, _call(2, "echo_message", message="fine"))["result"]["data"] == "fine"


def test_a_plain_env_answers_the_jsonrpc_error(echo_url):
    with _ws(echo_url) as sock:
        reply = _rpc(sock, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert reply["error"]["code"] == -32603 and "does not support MCP" in reply["error"]["message"]
