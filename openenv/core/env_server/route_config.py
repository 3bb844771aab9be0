"""Declarative GET endpoints: the published 0.10 ``GetEndpointConfig`` / ``register_get_endpoints``.

Usage::

    register_get_endpoints(app, [GetEndpointConfig("/info", lambda: {"v": 1}, dict, "Info", "Info", "...")])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI

__all__ = ["GetEndpointConfig", "register_get_endpoints"]


@dataclass
class GetEndpointConfig:
    """One GET route: its path, a zero-argument sync handler and its OpenAPI description."""

    path: str
    handler: Callable[[], Any]
    response_model: Any
    tag: str
    summary: str
    description: str


def _endpoint(handler: Callable[[], Any]) -> Callable[[], Any]:
    async def endpoint() -> Any:
        return handler()

    return endpoint


def register_get_endpoints(app: FastAPI, configs: list[GetEndpointConfig]) -> None:
    """Add one ``GET`` route to ``app`` per config (the handler is called on each request)."""
    for config in configs:
        app.add_api_route(
            config.path,
            _endpoint(config.handler),
            methods=["GET"],
            response_model=config.response_model,
            tags=[config.tag],
            summary=config.summary,
            description=config.description,
        )
