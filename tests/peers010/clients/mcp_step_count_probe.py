"""Count steps in an MCP env that overrides both ``step`` and ``step_async`` (as the catalogue's
sandbox envs do: ``self._state.step_count += 1`` in each, then ``super()``). Prints one JSON line:
the count after each call. Run under ours or the published 0.10."""

import asyncio
import json

from fastmcp import FastMCP

from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.types import Action, Observation


class Ping(Action):
    pass


class CountingEnv(MCPEnvironment):
    def __init__(self):
        mcp = FastMCP("counting")

        @mcp.tool
        def ping(text: str = "") -> str:
            """Echo the text."""
            return text

        super().__init__(mcp)
        self.count = 0

    def reset(self, seed=None, episode_id=None, **kwargs):
        self.count = 0
        return Observation()

    def _step_impl(self, action, timeout_s=None, **kwargs):
        return Observation(metadata={"plain": True})

    def step(self, action, timeout_s=None, **kwargs):
        self.count += 1
        return super().step(action, timeout_s=timeout_s, **kwargs)

    async def step_async(self, action, timeout_s=None, **kwargs):
        self.count += 1
        return await super().step_async(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self):
        return None


env = CountingEnv()
env.reset()
counts = []
for action in (ListToolsAction(), CallToolAction(tool_name="ping", arguments={"text": "a"}), Ping()):
    env.step(action)
    counts.append(env.count)
for action in (ListToolsAction(), CallToolAction(tool_name="ping", arguments={"text": "b"}), Ping()):
    asyncio.run(env.step_async(action))
    counts.append(env.count)
print(json.dumps({"counts": counts}))
