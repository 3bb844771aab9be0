"""``ToolboxEnvironment``: a small MCP tool environment over a FastMCP server.

Its tools cover each kind of argument a form must handle: a string (``echo``), numbers with a
default (``add``), an enum and an optional integer (``convert_temperature``), nested objects and a
literal choice (``distance``), and per-session state (``add_note``/``notes``). The episode's
reward is the number of notes taken; ``finish`` ends it.
"""

from __future__ import annotations

import html
from enum import Enum
from typing import Any, Literal
from uuid import uuid4

from fastmcp import FastMCP
from pydantic import BaseModel, Field

from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.types import EnvironmentMetadata, Observation, State

__all__ = ["Point", "TemperatureUnit", "ToolboxEnvironment"]


class TemperatureUnit(str, Enum):
    celsius = "celsius"
    fahrenheit = "fahrenheit"


class Point(BaseModel):
    """A point on the plane."""

    x: float = Field(description="Horizontal coordinate")
    y: float = Field(description="Vertical coordinate")


class ToolboxEnvironment(MCPEnvironment):
    """Echo, arithmetic, unit conversion, geometry and a notebook, as MCP tools."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("toolbox")
        self.notes: list[dict[str, Any]] = []
        self.finished = False

        @mcp.tool
        def echo(message: str) -> str:
            """Echo a message back."""
            return message

        @mcp.tool
        def add(a: float, b: float = 1.0) -> float:
            """Add two numbers (b defaults to 1)."""
            return a + b

        @mcp.tool
        def convert_temperature(value: float, unit: TemperatureUnit, precision: int | None = None) -> dict:
            """Convert a temperature given in ``unit`` to the other unit."""
            if unit == TemperatureUnit.celsius:
                out, to = value * 9 / 5 + 32, TemperatureUnit.fahrenheit
            else:
                out, to = (value - 32) * 5 / 9, TemperatureUnit.celsius
            return {"value": round(out, precision) if precision is not None else out, "unit": to.value}

        @mcp.tool
        def distance(start: Point, end: Point, metric: Literal["euclidean", "manhattan"] = "euclidean") -> float:
            """Distance between two points."""
            dx, dy = abs(start.x - end.x), abs(start.y - end.y)
            return dx + dy if metric == "manhattan" else (dx * dx + dy * dy) ** 0.5

        @mcp.tool
        def add_note(text: str, tag: str | None = None) -> int:
            """Write a note (optionally tagged); returns how many notes this episode holds."""
            if not text.strip():
                raise ValueError("a note needs some text")
            self.notes.append({"text": text, "tag": tag})
            return len(self.notes)

        @mcp.tool
        def notes(tag: str | None = None) -> list[dict]:
            """The notes of this episode (those with ``tag`` if given)."""
            return [n for n in self.notes if tag is None or n["tag"] == tag]

        @mcp.tool
        def finish() -> str:
            """End the episode."""
            self.finished = True
            return f"finished with {len(self.notes)} note(s)"

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        self.notes.clear()
        self.finished = False
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready", "notes": 0})

    # Both overrides count: as on 0.10, MCPEnvironment.step does not go through step_async.
    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self._state.step_count += 1
        return self._scored(super().step(action, timeout_s=timeout_s, **kwargs))

    async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self._state.step_count += 1
        return self._scored(await super().step_async(action, timeout_s=timeout_s, **kwargs))

    def _scored(self, obs: Any) -> Any:
        obs.reward = float(len(self.notes))
        obs.done = self.finished
        return obs

    def _step_impl(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": f"Unknown action {type(action).__name__}"})

    @property
    def state(self) -> State:
        return self._state

    # -- web hooks -------------------------------------------------------------------------

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name="toolbox", description=self.__class__.__doc__ or "", version="1.0")

    def render_web(self, observation: dict[str, Any]) -> str | None:
        """The notebook as an HTML list."""
        items = "".join(
            f"<li>{html.escape(n['text'])}{' <em>#' + html.escape(n['tag']) + '</em>' if n['tag'] else ''}</li>"
            for n in self.notes
        )
        return f"<h3>Notebook</h3><ol>{items}</ol>" if items else "<h3>Notebook</h3><p>No notes yet.</p>"

    def web_actions(self, observation: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """One-click actions: list the tools, read the notes, finish."""
        return [
            ("List tools", {"type": "list_tools"}),
            ("Read notes", {"type": "call_tool", "tool_name": "notes", "arguments": {}}),
            ("Finish", {"type": "call_tool", "tool_name": "finish", "arguments": {}}),
        ]
