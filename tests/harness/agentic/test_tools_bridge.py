"""Tool conflict resolution, the loopback MCP bridge (a real HTTP MCP server and client), the
config/event models and the adapter's turn assembly."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from fastmcp import Client, FastMCP
from pydantic import ValidationError

from openenv.core.env_server.mcp_types import Tool
from openenv.core.harness import (
    AgenticHarnessAdapter,
    HarnessClientMessage,
    HarnessConfig,
    HarnessError,
    HarnessEvent,
    HarnessEventType,
    HarnessMCPBridge,
    HarnessTransport,
    build_bridge_server,
    events_to_metadata,
    resolve_tool_conflicts,
)


def tool(name: str) -> Tool:
    return Tool(name=name, description=f"{name} tool", input_schema={"type": "object"})


def test_conflicts_are_prefixed_and_the_input_kept():
    tools = [tool("read_file"), tool("add")]
    out = resolve_tool_conflicts(tools, frozenset({"read_file", "bash"}))
    assert [t.name for t in out] == ["env_read_file", "add"]
    assert out[0].description == "read_file tool"
    assert [t.name for t in tools] == ["read_file", "add"]
    assert [t.name for t in resolve_tool_conflicts(tools, {"add"}, prefix="x_")] == ["read_file", "x_add"]


@pytest.mark.parametrize(
    ("names", "builtins", "message"),
    [
        (["step", "add"], set(), "reserved for orchestration controls: step"),
        (["close", "reset"], set(), "reserved for orchestration controls: close, reset"),
        (["add", "add"], set(), "Duplicate environment tool name: add"),
        (["read_file", "env_read_file"], {"read_file"}, "also taken"),
        (["read_file"], {"read_file", "env_read_file"}, "also taken"),
    ],
)
def test_unresolvable_tool_names_fail_loudly(names, builtins, message):
    with pytest.raises(ValueError, match=message):
        resolve_tool_conflicts([tool(n) for n in names], builtins)


def _mcp() -> FastMCP:
    mcp = FastMCP("domain")

    @mcp.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @mcp.tool
    def read_file(path: str) -> str:
        """Read."""
        return f"contents of {path}"

    return mcp


async def _call(url: str, name: str, args: dict) -> tuple[list[str], object]:
    async with Client(url) as client:
        names = sorted(t.name for t in await client.list_tools())
        result = await client.call_tool(name, args)
        return names, result.data


def test_bridge_serves_the_tools_over_loopback_http():
    bridge = HarnessMCPBridge(_mcp())
    assert bridge.url is None
    url = bridge.start()
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        assert bridge.start() == url  # idempotent
        names, value = asyncio.run(_call(url, "add", {"a": 2, "b": 3}))
        assert names == ["add", "read_file"] and value == 5
    finally:
        bridge.stop()
    assert bridge.url is None
    bridge.stop()  # idempotent
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0  # nothing listens any more


def test_bridge_refuses_web_pages_and_rebound_names():
    import httpx

    bridge = HarnessMCPBridge(_mcp())
    url = bridge.start()
    try:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        page = httpx.post(url, content=json.dumps(call), timeout=10,
                          headers={"Content-Type": "text/plain", "Origin": "http://127.0.0.1:9"})
        assert page.status_code == 403 and page.json()["code"] == "ORIGIN_NOT_ALLOWED"
        rebound = httpx.post(url, json=call, headers={"Host": "rebound.example"}, timeout=10)
        assert rebound.status_code == 403 and rebound.json()["code"] == "HOST_NOT_ALLOWED"
        names, _ = asyncio.run(_call(url, "add", {"a": 1, "b": 1}))  # the harness's own client: unaffected
        assert "add" in names
    finally:
        bridge.stop()


def test_renamed_tools_answer_to_their_injected_names():
    source = _mcp()
    assert asyncio.run(build_bridge_server(source, {})) is source  # nothing renamed: served as is
    # (the source is built outside any loop, as an environment's server is)
    bridge = HarnessMCPBridge(asyncio.run(build_bridge_server(_mcp(), {"env_read_file": "read_file"})))
    url = bridge.start()
    try:
        names, value = asyncio.run(_call(url, "env_read_file", {"path": "a.txt"}))
        assert names == ["add", "env_read_file"] and value == "contents of a.txt"
    finally:
        bridge.stop()
    with pytest.raises(HarnessError, match="does not expose: nope"):
        asyncio.run(build_bridge_server(_mcp(), {"env_nope": "nope"}))


def test_config_and_event_models():
    config = HarnessConfig(name="h", command=["h", "run"])
    assert (config.working_directory, config.transport, config.startup_timeout_s, config.session_timeout_s) == (
        "/workspace", HarnessTransport.STDIO, 30.0, 600.0)
    assert HarnessConfig(name="h", command=["h"], transport="http").transport is HarnessTransport.STREAMABLE_HTTP
    with pytest.raises(ValidationError, match="at least one element"):
        HarnessConfig(name="h", command=[])
    with pytest.raises(ValidationError):
        HarnessConfig(name="h", command=["h"], unknown=1)
    event = HarnessEvent(type=HarnessEventType.TOOL_CALL, data={"tool_name": "add", "arguments": {"a": 1}})
    (meta,) = events_to_metadata([event])
    assert meta["type"] == "tool_call" and isinstance(meta["timestamp"], float)
    assert json.loads(json.dumps(meta)) == meta
    assert HarnessClientMessage(type="message", content="hi").content == "hi"
    with pytest.raises(ValidationError):
        HarnessClientMessage(type="step", content="hi")


class _Scripted(AgenticHarnessAdapter):
    def __init__(self, events):
        super().__init__(HarnessConfig(name="s", command=["s"]))
        self.events = events

    async def start(self, working_directory):
        pass

    async def stop(self):
        pass

    async def inject_tools(self, tools, bridge_url=None):
        pass

    async def is_alive(self):
        return True

    async def send_message_streaming(self, message):
        for event in self.events:
            yield event


def test_send_message_assembles_the_turn_or_names_the_missing_end():
    events = [
        HarnessEvent(type=HarnessEventType.TEXT_OUTPUT, data={"text": "thinking"}),
        HarnessEvent(type=HarnessEventType.TURN_COMPLETE, data={"response": 42, "done": 1}),
    ]
    reply = asyncio.run(_Scripted(events).send_message("go"))
    assert (reply.response, reply.done, len(reply.events)) == ("42", True, 2)
    with pytest.raises(HarnessError, match="without a TURN_COMPLETE"):
        asyncio.run(_Scripted(events[:1]).send_message("go"))
    with pytest.raises(HarnessError, match="without a TURN_COMPLETE"):
        asyncio.run(_Scripted([]).send_message("go"))
