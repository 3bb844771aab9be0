"""An MCP tool environment written for the published openenv 0.10 (FastMCP tools), unchanged.

Served by ours and by the published 0.10 in the differential tests (tests/interop010/test_mcp_diff.py).
"""

from __future__ import annotations

import time
from enum import Enum
from typing import Literal
from uuid import uuid4

from fastmcp import FastMCP
from pydantic import BaseModel

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State


class Unit(str, Enum):
    celsius = "celsius"
    fahrenheit = "fahrenheit"


class Point(BaseModel):
    x: float
    y: float


class ToolsEnvironment(MCPEnvironment):
    """Echo and arithmetic tools."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("tools_env")
        self.calls = 0

        @mcp.tool
        def echo_message(message: str) -> str:
            """Echo a message back."""
            self.calls += 1
            return message

        @mcp.tool
        def add(a: float, b: float = 1.0) -> float:
            """Add two numbers."""
            return a + b

        @mcp.tool
        def convert(value: float, unit: Unit, precision: int | None = None) -> dict:
            """Convert a temperature to the other unit."""
            out = value * 9 / 5 + 32 if unit == Unit.celsius else (value - 32) * 5 / 9
            if precision is not None:
                out = round(out, precision)
            return {"value": out, "unit": "fahrenheit" if unit == Unit.celsius else "celsius"}

        @mcp.tool
        def distance(a: Point, b: Point, mode: Literal["euclid", "manhattan"] = "euclid") -> float:
            """Distance between two points."""
            if mode == "manhattan":
                return abs(a.x - b.x) + abs(a.y - b.y)
            return ((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5

        @mcp.tool
        def fail(reason: str) -> str:
            """Always raises."""
            raise ValueError(f"refused: {reason}")

        @mcp.tool
        def slow(seconds: float) -> str:
            """Sleep, then answer."""
            time.sleep(seconds)
            return "done"

        @mcp.tool
        def call_count() -> int:
            """How many echo_message calls this session made."""
            return self.calls

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready"})

    def _step_impl(self, action, timeout_s=None, **kwargs) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": f"Unknown action {type(action).__name__}"})

    def step(self, action, timeout_s=None, **kwargs):
        self._state.step_count += 1
        return super().step(action, timeout_s=timeout_s, **kwargs)

    async def step_async(self, action, timeout_s=None, **kwargs):
        self._state.step_count += 1
        return await super().step_async(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self) -> State:
        return self._state


app = create_app(ToolsEnvironment, CallToolAction, CallToolObservation, env_name="tools_env", max_concurrent_envs=8)
