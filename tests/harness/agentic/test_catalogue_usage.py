"""0.10's turn-based harness names used the way the catalogue's agent envs use them.

An opencode-style adapter (config file ``opencode.json`` written into the workspace by
``inject_tools``, one ``run --format json`` process per turn whose JSON lines are mapped onto
``HarnessEvent``s), a FastMCP domain tool server, ``HarnessEnvironment(adapter=..., mcp=...)``
served by ``create_app`` with ``HarnessAction``; plus the catalogue tests' idioms
(``env.adapter is adapter``, streaming a turn, ``events_to_metadata``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi.testclient import TestClient
from fastmcp import FastMCP

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_types import Tool
from openenv.core.env_server.types import Observation
from openenv.core.harness import (
    AgenticHarnessAdapter,
    HarnessAction,
    HarnessConfig,
    HarnessEnvironment,
    HarnessError,
    HarnessEvent,
    HarnessEventType,
    HarnessProcess,
    events_to_metadata,
)

FAKE_CLI = Path(__file__).with_name("fake_cli.py")
MCP_SERVER_NAME = "env"


class OpenCodeStyleAdapter(AgenticHarnessAdapter):
    """One CLI process per turn; tools reach it through the workspace's ``opencode.json``."""

    BUILTIN_TOOL_NAMES = frozenset({"bash", "edit", "read", "write"})

    def __init__(self, config: HarnessConfig):
        super().__init__(config)
        self._workdir: Path | None = None
        self._tools: list[Tool] = []
        self._bridge_url: str | None = None
        self._turn: HarnessProcess | None = None

    async def inject_tools(self, tools: list[Tool], bridge_url: str | None = None) -> None:
        self._tools, self._bridge_url = list(tools), bridge_url

    async def start(self, working_directory: str) -> None:
        self._workdir = Path(working_directory)
        self._workdir.mkdir(parents=True, exist_ok=True)
        (self._workdir / ".fake_cli_history.json").unlink(missing_ok=True)
        servers = {MCP_SERVER_NAME: {"type": "remote", "url": self._bridge_url, "enabled": True}}
        (self._workdir / "opencode.json").write_text(json.dumps({"mcp": servers, "model": self.config.model}))

    async def stop(self) -> None:
        if self._turn is not None:
            await self._turn.stop()
        self._workdir = None

    async def is_alive(self) -> bool:
        return self._workdir is not None

    async def send_message_streaming(self, message: str) -> AsyncIterator[HarnessEvent]:
        if self._workdir is None:
            raise HarnessError("opencode-style harness is not started")
        self._turn = HarnessProcess([*self.config.command, "run", "--format", "json", message],
                                    cwd=str(self._workdir), env_vars=self.config.env_vars)
        await self._turn.start()
        try:
            async for event in self._events():
                yield event
        finally:
            await self._turn.stop()  # reap the turn's process and close its pipes

    async def _events(self) -> AsyncIterator[HarnessEvent]:
        text = ""
        while (line := await self._turn.read_line(timeout_s=self.config.session_timeout_s)) is not None:
            frame = json.loads(line)
            part = frame["part"]
            if frame["type"] == "tool_use":
                yield HarnessEvent(type=HarnessEventType.TOOL_CALL,
                                   data={"tool_name": part["tool"], "arguments": part["input"]})
                yield HarnessEvent(type=HarnessEventType.TOOL_RESULT,
                                   data={"tool_name": part["tool"], "result": part["output"], "error": part["error"]})
            elif frame["type"] == "text":
                text = part["text"]
                yield HarnessEvent(type=HarnessEventType.TEXT_OUTPUT, data={"text": text})
            elif frame["type"] == "step_finish":
                yield HarnessEvent(type=HarnessEventType.TURN_COMPLETE, data={"response": text, "done": False})
                return
        await self._turn.stop()  # joins the readers, so the whole stderr is in
        stderr = self._turn.drain_stderr().strip()
        raise HarnessError(f"opencode-style run ended without finishing: {stderr}")


def _mcp() -> FastMCP:
    mcp = FastMCP("repo-tools")

    @mcp.tool
    def read(path: str) -> str:
        """Read a file of the task's repository."""
        return {"README.md": "# demo"}.get(path, "")

    @mcp.tool
    def run_tests() -> str:
        """Run the task's tests."""
        return "3 passed"

    return mcp


def _config(tmp_path: Path) -> HarnessConfig:
    return HarnessConfig(name="opencode", command=[sys.executable, str(FAKE_CLI)],
                         working_directory=str(tmp_path / "workspace"), model="fake/model",
                         session_timeout_s=30.0)


def test_env_holds_its_adapter_and_injects_prefixed_tools(tmp_path):
    adapter = OpenCodeStyleAdapter(_config(tmp_path))
    env = HarnessEnvironment(adapter=adapter, mcp=_mcp())
    assert env.adapter is adapter
    try:
        first = env.reset()
        assert first.metadata["injected_tools"] == ["env_read", "run_tests"]
        written = json.loads((tmp_path / "workspace" / "opencode.json").read_text())
        assert written["mcp"]["env"]["url"].endswith("/mcp") and written["model"] == "fake/model"
        obs = env.step(HarnessAction(message="use env_read {\"path\": \"README.md\"}"))
        assert obs.metadata["response"] == "used env_read: # demo"
        assert [e["type"] for e in obs.metadata["turn_events"]] == [
            "tool_call", "tool_result", "text_output", "turn_complete"]
        obs = env.step(HarnessAction(message="use run_tests"))
        assert obs.metadata["response"] == "used run_tests: 3 passed" and obs.metadata["turn_number"] == 2
        assert env.step(HarnessAction(message="summarise")).metadata["response"] == "turn 3: summarise"
        failed = env.step(HarnessAction(message="fail"))
        assert failed.done and failed.metadata["error_type"] == "harness_crashed"
        assert "model provider refused" in failed.metadata["error"]
    finally:
        env.close()


def test_streaming_a_turn_and_events_to_metadata(tmp_path):
    adapter = OpenCodeStyleAdapter(_config(tmp_path))

    async def turn():
        await adapter.inject_tools([], None)
        await adapter.start(adapter.config.working_directory)
        try:
            return [event async for event in adapter.send_message_streaming("hello")]
        finally:
            await adapter.stop()

    events = asyncio.run(turn())
    assert events[-1].type == HarnessEventType.TURN_COMPLETE
    assert events_to_metadata(events)[-1]["data"] == {"response": "turn 1: hello", "done": False}


def test_served_by_create_app_like_any_env(tmp_path):
    app = create_app(lambda: HarnessEnvironment(adapter=OpenCodeStyleAdapter(_config(tmp_path)), mcp=_mcp()),
                     HarnessAction, Observation, env_name="opencode_style")
    with TestClient(app) as client:
        schema = client.get("/schema").json()
        assert "message" in json.dumps(schema["action"])
        with client.websocket_connect("/ws") as ws:
            ws.send_json({"type": "reset", "data": {}})
            assert ws.receive_json()["data"]["observation"]["metadata"]["injected_tools"] == ["env_read", "run_tests"]
            ws.send_json({"type": "step", "data": {"message": "use run_tests"}})
            reply = ws.receive_json()
            assert reply["data"]["observation"]["metadata"]["response"] == "used run_tests: 3 passed"
            ws.send_json({"type": "step", "data": {}})
            assert ws.receive_json()["data"]["code"] == "VALIDATION_ERROR"
