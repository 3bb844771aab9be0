"""The seam where MCP (RFC 003) routes join an app; the MCP module fills it in.

``HTTPEnvServer.register_routes(app, mode)`` calls :func:`install` once per app, after the
core routes, for every environment (MCP or not: a non-MCP environment must still answer
``POST /mcp`` with the JSON-RPC error). :func:`install` imports
``openenv.core.env_server.mcp_routes`` lazily and calls its ``install(app, server, mode)``;
until that module exists it does nothing. ``mcp_routes`` must import no ``fastmcp`` at module
level, so a plain environment's start time and memory stay as they are.

What ``mcp_routes.install`` can rely on:

* ``server.mode`` — the resolved :class:`ServerMode`; in ``production`` the core routes left
  out ``POST /reset``, ``POST /step`` and ``GET /state`` (tools go over ``/mcp``), ``/ws`` stays.
* ``server.sessions`` (``create(kind)``, ``get(id)``, ``close(id)``), ``server.dispatcher``,
  ``server.executor``, ``server.env_cls`` and ``server.instance``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

    from openenv.core.env_server.types import ServerMode

__all__ = ["MCP_ROUTES_MODULE", "install"]

MCP_ROUTES_MODULE = "openenv.core.env_server.mcp_routes"


def install(app: FastAPI, server: Any, mode: ServerMode) -> None:
    """Add the MCP routes to ``app`` when the MCP routes module is present; else return."""
    try:
        module = importlib.import_module(MCP_ROUTES_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != MCP_ROUTES_MODULE:
            raise
        return
    module.install(app, server, mode)
