"""ASGI app for the toolbox MCP environment: ``openenv serve toolbox``."""

from __future__ import annotations

try:
    from openenv.envs.toolbox.environment import ToolboxEnvironment
except ModuleNotFoundError as exc:  # the optional extra is missing
    if exc.name not in ("fastmcp", "mcp"):
        raise
    raise ModuleNotFoundError(
        "the toolbox environment needs fastmcp: pip install fastmcp", name=exc.name
    ) from exc

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation

app = create_app(
    ToolboxEnvironment, CallToolAction, CallToolObservation, env_name="toolbox", reset_observation_cls=Observation
)
