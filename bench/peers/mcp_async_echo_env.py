"""The bench's MCP env with ``echo_message`` as an ``async`` tool (no worker-thread hop), written for
0.10 so ours and the published package serve it unchanged (``bench/mcp.py --tool async``)."""

from __future__ import annotations

from uuid import uuid4

from fastmcp import FastMCP

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State


class AsyncEchoEnvironment(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("async_echo")

        @mcp.tool
        async def echo_message(message: str) -> str:
            """Echo a message back."""
            return message

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0)

    def _step_impl(self, action, timeout_s=None, **kwargs) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": f"Unknown action {type(action).__name__}"})

    @property
    def state(self) -> State:
        return self._state


app = create_app(AsyncEchoEnvironment, CallToolAction, CallToolObservation, env_name="async_echo", max_concurrent_envs=8)
