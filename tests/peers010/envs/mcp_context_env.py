"""An MCP environment whose tools take a FastMCP ``Context``: one logs with ``ctx.info``, one keeps
a per-session counter with ``ctx.set_state``/``ctx.get_state``, one reads ``ctx.session_id``."""

from fastmcp import Context, FastMCP

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State


class ContextToolsEnvironment(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("context_tools")

        @mcp.tool
        async def logged(x: int, ctx: Context) -> int:
            """Log, then return x."""
            await ctx.info(f"logged {x}")
            return x

        @mcp.tool
        async def inc_counter(ctx: Context) -> str:
            """Increment a per-session counter."""
            count = (await ctx.get_state("counter")) or 0
            await ctx.set_state("counter", count + 1)
            return str(count + 1)

        @mcp.tool
        def has_session(ctx: Context) -> bool:
            """Whether the tool sees an MCP session id."""
            return bool(ctx.session_id)

        @mcp.tool
        def plain(x: int) -> int:
            """No context."""
            return x * 2

        super().__init__(mcp)

    def reset(self, seed=None, episode_id=None, **kwargs) -> Observation:
        return Observation(done=False, reward=0.0)

    def _step_impl(self, action, timeout_s=None, **kwargs) -> Observation:
        return Observation(done=False, reward=0.0)

    @property
    def state(self) -> State:
        return State(step_count=0)


app = create_app(ContextToolsEnvironment, CallToolAction, CallToolObservation, env_name="context_tools")
