"""0.10's JSON web API beside our ``/web`` page: ``POST /web/reset``, ``POST /web/step``,
``GET /web/state``, ``GET /web/metadata``.

As on 0.10 they drive one shared session (a :class:`WebInterfaceManager`), opened on first use:
``/web/reset`` takes an optional JSON object of reset keywords (keys ``reset`` does not accept are
dropped), ``/web/step`` takes ``{"action": {...}}`` (a ``call_tool`` whose ``arguments`` is a JSON
string is parsed, as 0.10's form does) or ``{"message": text}`` for chat environments. Errors are
our coded JSON; ``/web/state`` before any reset is ``409 STEP_BEFORE_RESET`` ("Call reset() first").
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from openenv.core.errors import ActionValidationError, LifecycleError, OpenEnvError, ProtocolError

__all__ = ["build_web_api_router"]


def build_web_api_router(server: Any) -> APIRouter:
    """The four routes, over one :class:`WebInterfaceManager` of ``server``."""
    from openenv.core.env_server.http_routes import _JSON, _read_json, error_response
    from openenv.core.env_server.types import EnvironmentMetadata
    from openenv.core.env_server.web_interface import WebInterfaceManager

    router = APIRouter()
    manager = WebInterfaceManager(server, EnvironmentMetadata(name=server.env_name or "environment"))
    limit = getattr(server, "max_message_bytes", 16 * 1024 * 1024)

    async def body(request: Request) -> dict[str, Any]:
        return await _read_json(request, limit)

    @router.post("/web/reset", include_in_schema=False)
    async def web_reset(request: Request) -> Response:
        try:
            return _JSON(await manager.reset_environment(await body(request)))
        except OpenEnvError as err:
            return error_response(err)

    @router.post("/web/step", include_in_schema=False)
    async def web_step(request: Request) -> Response:
        try:
            data = await body(request)
            return _JSON(await manager.step_environment(_action_data(data, server.action_cls)))
        except OpenEnvError as err:
            return error_response(err)

    @router.get("/web/state", include_in_schema=False)
    async def web_state() -> Response:
        if manager._session_id is None:
            return error_response(LifecycleError("Environment not initialized. Call reset() first."))
        try:
            return _JSON(await server.state(manager._session_id))
        except OpenEnvError as err:
            return error_response(err)

    @router.get("/web/metadata", include_in_schema=False)
    async def web_metadata() -> Response:
        try:
            return _JSON(await server.metadata())
        except OpenEnvError as err:
            return error_response(err)

    return router


def _action_data(data: dict[str, Any], action_cls: Any) -> dict[str, Any]:
    """The action dict of a ``/web/step`` body, with 0.10's form conversions applied."""
    if "message" in data and "action" not in data:
        return {"message": data["message"]}
    action = data.get("action", {})
    if not isinstance(action, dict):
        raise ProtocolError('"action" must be a JSON object', code="INVALID_JSON")
    if action_cls is None:
        return action
    from pydantic import BaseModel, ValidationError

    from openenv.core.env_server.serialization import deserialize_action_with_preprocessing

    try:
        parsed = deserialize_action_with_preprocessing(action, action_cls)
    except ValidationError:
        return action  # the server's own validation answers with the coded error
    except (TypeError, ValueError) as exc:
        raise ActionValidationError(f"Invalid action: {exc}") from None
    if isinstance(parsed, BaseModel):
        dumped = parsed.model_dump(exclude_unset=True)
        if "type" in action:
            dumped["type"] = action["type"]
        return dumped
    return action
