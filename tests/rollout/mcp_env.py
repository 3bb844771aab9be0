"""A small MCP-shaped environment (plain step actions, as /work/shared/compat-0.10.md §2 puts
them on the wire): ``{"type": "list_tools"}`` → ``tools``; ``{"type": "call_tool", "tool_name",
"arguments"}`` → ``result``. Tools: ``add(a, b)``; ``finish(answer)`` ends the episode with reward
1 when the answer is 5. Stands in for the real MCPEnvironment until branch mcp lands."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from openenv.core.env_server import Environment, create_app
from openenv.core.env_server.types import Action, Observation, State

TOOLS = [
    {"name": "add", "description": "Add two integers.",
     "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                      "required": ["a", "b"]}},
    {"name": "finish", "description": "Give the final answer (what is 2 + 3?).",
     "input_schema": {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}},
]  # fmt: skip


class ToolAction(Action):
    type: Literal["list_tools", "call_tool"]
    tool_name: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolObservation(Observation):
    task: str = ""
    tools: list[dict[str, Any]] | None = None
    tool_name: str | None = None
    result: Any = None
    error: str | None = None


class ToolEnv(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ToolObservation:
        self._state = State(episode_id=episode_id, step_count=0)
        return ToolObservation(task="Work out 2 + 3 with the tools, then call finish.", reward=0.0)

    def step(self, action: ToolAction, timeout_s: float | None = None, **kwargs: Any) -> ToolObservation:
        self._state.step_count += 1
        if action.type == "list_tools":
            return ToolObservation(tools=TOOLS)
        args = action.arguments
        if action.tool_name == "add":
            return ToolObservation(tool_name="add", result=int(args.get("a", 0)) + int(args.get("b", 0)), reward=0.0)
        if action.tool_name == "finish":
            ok = args.get("answer") == 5
            return ToolObservation(tool_name="finish", result="correct" if ok else "wrong", done=True,
                                   reward=1.0 if ok else 0.0)  # fmt: skip
        return ToolObservation(tool_name=action.tool_name, error=f"unknown tool {action.tool_name!r}", reward=0.0)

    @property
    def state(self) -> State:
        return self._state


app = create_app(ToolEnv, ToolAction, ToolObservation, env_name="tools")


class SoloToolEnv(ToolEnv):
    """The same env, one session at a time (``max_concurrent_envs`` 1)."""

    SUPPORTS_CONCURRENT_SESSIONS = False


solo_app = create_app(SoloToolEnv, ToolAction, ToolObservation, env_name="tools-solo")
