"""Our bundled (non-MCP) echo environment, for ``openenv validate --url`` against a plain server."""

from openenv.envs.echo.app import app  # noqa: F401
