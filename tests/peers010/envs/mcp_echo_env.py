"""An MCP echo environment shaped like 0.10's catalogue ``echo_env``: FastMCP tools, a plain
``Observation`` on reset, ``CallToolAction``/``CallToolObservation`` as the declared types.

Its reset observation does not match the step observation's schema (``tool_name`` is required
there): 0.10 serves it as is, and a validator must not hold reset to the step schema.
"""

from uuid import uuid4

from fastmcp import FastMCP

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State


class McpEchoEnvironment(MCPEnvironment):
    def __init__(self) -> None:
        mcp = FastMCP("echo_env")

        @mcp.tool
        def echo_message(message: str) -> str:
            """Echo the message back."""
            return message

        @mcp.tool
        def echo_with_length(message: str) -> dict:
            """Echo the message and its length."""
            return {"message": message, "length": len(message)}

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready"})

    def _step_impl(self, action, timeout_s=None, **kwargs) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": f"unknown action {type(action).__name__}"})

    def step(self, action, timeout_s=None, **kwargs):
        self._state.step_count += 1
        return super().step(action, timeout_s=timeout_s, **kwargs)

    async def step_async(self, action, timeout_s=None, **kwargs):  # servers call this one when it exists
        self._state.step_count += 1
        return await super().step_async(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self) -> State:
        return self._state


app = create_app(McpEchoEnvironment, CallToolAction, CallToolObservation, env_name="echo_env")
