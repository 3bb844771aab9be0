"""The MCP tool env the MCP tests serve (``tests/peers010/mcp_tools_env.py``, written for 0.10)."""

from __future__ import annotations

from typing import Any


def tools_app(**options: Any) -> Any:
    """``create_app`` of the tools env (no /web); ``options`` go to ``create_app``."""
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
    from tests.peers010.mcp_tools_env import ToolsEnvironment

    return create_app(ToolsEnvironment, CallToolAction, CallToolObservation, env_name="tools_env", web=False, **options)
