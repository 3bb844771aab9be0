"""The bundled toolbox MCP environment: served by ``openenv serve toolbox``, listed in the catalogue."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openenv.cli.targets import bundled_envs
from tests.server_utils import free_port, wait_healthy


def test_toolbox_is_a_bundled_env():
    assert "toolbox" in bundled_envs()


def test_toolbox_tools_cover_every_argument_kind():
    import asyncio

    from openenv.envs.toolbox.environment import ToolboxEnvironment

    env = ToolboxEnvironment()
    tools = {t.name: t.input_schema for t in asyncio.run(env.list_tools_async())}
    props = tools["convert_temperature"]["properties"]
    assert props["value"]["type"] == "number"
    assert props["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert {"type": "null"} in props["precision"]["anyOf"]
    assert tools["echo"]["properties"]["message"]["type"] == "string"
    start = tools["distance"]["properties"]["start"]
    assert start.get("$ref") or start.get("type") == "object"
    env.close()


def test_openenv_serve_toolbox_plays_an_episode():
    from openenv.core.env_server.mcp_types import CallToolAction
    from openenv.core.mcp_client import MCPToolClient

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv", "serve", "toolbox", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, timeout_s=30)
        with MCPToolClient(base_url=url).sync() as env:
            env.reset()
            assert env.call_tool("add_note", text="first", tag="a") == 1
            assert env.call_tool("add_note", text="second") == 2
            assert env.call_tool("notes", tag="a") == [{"text": "first", "tag": "a"}]
            assert env.call_tool("distance", start={"x": 0, "y": 0}, end={"x": 3, "y": 4}, metric="manhattan") == 7.0
            assert env.call_tool("convert_temperature", value=212, unit="fahrenheit", precision=1) == {
                "value": 100.0,
                "unit": "celsius",
            }
            with pytest.raises(RuntimeError, match="a note needs some text"):
                env.call_tool("add_note", text="  ")
            result = env.step(CallToolAction(tool_name="finish"))
            assert result.done is True and result.reward == 2.0
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()
