"""The toolbox environment: an MCP tool environment (needs the ``mcp`` extra: ``fastmcp``).

Import ``openenv.envs.toolbox.environment`` for :class:`ToolboxEnvironment`; this package
itself imports nothing, so listing bundled environments never needs ``fastmcp``.
"""

__all__: list[str] = []
