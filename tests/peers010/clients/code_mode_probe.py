"""Code mode, mode-aware tools and the client mode, as an env author and a trainer meet them.
Prints one JSON line per check. Run under ours or the published 0.10."""

import json
import os

from fastmcp import FastMCP

from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.types import Observation, State
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient


class CodeEnv(MCPEnvironment):
    def __init__(self):
        mcp = FastMCP("code")

        @mcp.tool
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        super().__init__(mcp)
        self._mode = "simulation"

        @self.tool(mode="simulation")
        def lookup(query: str) -> str:
            """Look something up."""
            return f"sim:{query}"

        @self.tool(mode="production")
        def lookup(query: str) -> str:  # noqa: F811
            """Look something up."""
            return f"prod:{query}"

        @self.tool(mode="production")
        def deploy(target: str, force: bool = False) -> str:
            """Deploy."""
            return f"deployed {target}"

    def reset(self, seed=None, episode_id=None, **kwargs):
        return Observation()

    def _step_impl(self, action, timeout_s=None, **kwargs):
        return Observation()

    @property
    def state(self):
        return State()


def out(**fields):
    print(json.dumps(fields, sort_keys=True, default=str))


def tools(env):
    obs = env.step(ListToolsAction())
    return sorted((t.name, json.dumps(t.input_schema, sort_keys=True)) for t in obs.tools)


def call(env, name, **arguments):
    obs = env.step(CallToolAction(tool_name=name, arguments=arguments))
    if obs.error is not None:
        return {"error_type": obs.error.error_type.value, "has_message": bool(obs.error.message)}
    return {"data": obs.result.data, "text": [c.text for c in obs.result.content]}


env = CodeEnv()
out(check="supports_code_mode", value=env.supports_code_mode)
out(check="callables", value=sorted(env.get_callables()))
out(check="code", value=env.execute_code("x = add(a=2, b=3)\nresult = lookup(query=str(x))").metadata)
out(check="syntax", value=env.execute_code("result = add(a=").metadata["error"].startswith("Syntax error"))
out(check="missing", value="nope" in env.execute_code("result = nope(x=1)").metadata["error"])
out(check="tools_sim", value=tools(env))
out(check="call_sim", value=call(env, "lookup", query="q"))
out(check="call_other_mode", value=call(env, "deploy", target="x"))
env._mode = "production"
out(check="tools_prod", value=tools(env))
out(check="call_prod", value=call(env, "lookup", query="q"))
out(check="code_prod", value=env.execute_code("result = deploy(target='t')").metadata)
try:
    env.tool(mode="staging")
except ValueError as exc:
    out(check="bad_mode", value="mode" in str(exc).lower())
try:
    @env.tool(mode="production")
    def reset() -> str:
        return ""
except ValueError as exc:
    out(check="reserved", value="reserved" in str(exc))

os.environ.pop("OPENENV_CLIENT_MODE", None)
out(check="client_default", value=GenericEnvClient(base_url="http://127.0.0.1:9")._mode)
out(check="client_explicit", value=GenericEnvClient(base_url="http://127.0.0.1:9", mode="PRODUCTION")._mode)
os.environ["OPENENV_CLIENT_MODE"] = "Production"
out(check="client_env", value=GenericEnvClient(base_url="http://127.0.0.1:9")._mode)
os.environ["OPENENV_CLIENT_MODE"] = "bogus"
try:
    GenericEnvClient(base_url="http://127.0.0.1:9")
except ValueError as exc:
    out(check="client_env_bad", value="OPENENV_CLIENT_MODE" in str(exc))
os.environ.pop("OPENENV_CLIENT_MODE")
client = GenericEnvClient(base_url="http://127.0.0.1:9")
try:
    client._mode = "production"
except AttributeError:
    out(check="client_mode_read_only", value=True)
doc = GenericEnvClient.__init__.__doc__ or ""
out(check="client_doc", value=all(w in doc.lower() for w in ("mode", "simulation", "production")))
mcp_client = MCPToolClient(base_url="wss://example.com/env")
out(check="mcp_client", value=[mcp_client._mode, mcp_client.use_production_mode, mcp_client._production_mcp_url()])
try:
    MCPToolClient(base_url="http://127.0.0.1:9", mode="simulation")
except ValueError as exc:
    out(check="mcp_client_sim", value="MCPToolClient" in str(exc))
