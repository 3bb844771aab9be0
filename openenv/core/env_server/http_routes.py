"""HTTP endpoints: /reset /step /state /schema /metadata /health and the session listing.

Stateless by default, as published: each ``/reset`` or ``/step`` uses a fresh environment.
Send ``X-OpenEnv-Session: new`` on ``/reset`` to open a session; the reply carries its id in
the same header (and ``session_id`` in the body); send it on later calls to continue the episode.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from openenv.core.env_server.dispatch import parse_timeout
from openenv.core.env_server.http_server import SESSION_HEADER, HTTPEnvServer
from openenv.core.env_server.serialization import dumps, loads
from openenv.core.errors import ActionValidationError, OpenEnvError, ProtocolError

__all__ = ["build_http_router", "error_response"]

BODY_READ_TIMEOUT_S = 30.0

_STATUS = {
    "INVALID_JSON": 400,
    "UNKNOWN_TYPE": 400,
    "UNSUPPORTED_FRAME": 400,
    "MESSAGE_TOO_LARGE": 413,
    "VALIDATION_ERROR": 422,
    "STEP_BEFORE_RESET": 409,
    "ENV_BUSY": 409,
    "STEP_INTERRUPTED": 409,
    "SESSION_ERROR": 404,
    "CAPACITY_REACHED": 503,
    "TIMEOUT": 504,
    "BODY_TIMEOUT": 408,
    "UNKNOWN_ENV": 404,  # the Task API's /{env_name}/... names another environment
    "INVALID_TASK_INDEX": 400,
    "NOT_IMPLEMENTED": 501,  # the environment lacks that Task API method
}


class _JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


def error_response(err: OpenEnvError) -> Response:
    """The one pinned HTTP error shape: ``{"detail", "code", "message", ...}``."""
    body = err.to_wire()
    body["detail"] = err.errors if isinstance(err, ActionValidationError) else err.message
    return _JSON(body, status_code=_STATUS.get(err.code, 500))


async def _read_json(request: Request, limit: int) -> dict[str, Any]:
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > limit:
        raise ProtocolError(f"Request body over {limit} bytes", code="MESSAGE_TOO_LARGE")
    chunks, size = [], 0

    async def collect() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ProtocolError(f"Request body over {limit} bytes", code="MESSAGE_TOO_LARGE")
            chunks.append(chunk)

    try:
        await asyncio.wait_for(collect(), BODY_READ_TIMEOUT_S)
    except TimeoutError:
        raise ProtocolError("Request body not received in time", code="BODY_TIMEOUT") from None
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    data = loads(raw)
    if not isinstance(data, dict):
        raise ProtocolError("Request body must be a JSON object", code="INVALID_JSON")
    return data


def _with_request_id(payload: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    rid = body.get("request_id")
    if isinstance(rid, (str, int)) and not isinstance(rid, bool):
        payload["request_id"] = rid
    return payload


_RESET_DOC = {
    "requestBody": {
        "content": {"application/json": {"schema": {"type": "object", "properties": {
            "seed": {"type": "integer", "minimum": 0}, "episode_id": {"type": "string"}},
            "additionalProperties": True}}},
        "required": False,
    }
}
_STEP_DOC = {
    "requestBody": {
        "content": {"application/json": {"schema": {"type": "object", "required": ["action"], "properties": {
            "action": {"type": "object"}, "timeout_s": {"type": "number", "exclusiveMinimum": 0},
            "request_id": {"type": "string"}}}}},
        "required": True,
    }
}


def build_http_router(server: HTTPEnvServer, *, simulation: bool = True) -> APIRouter:
    """Routes bound to ``server``; every failure becomes a coded JSON error.

    ``simulation=False`` (0.10's production mode) leaves out ``/reset``, ``/step`` and ``/state``.
    """
    router = APIRouter()
    limit = server.max_message_bytes
    if simulation:
        _add_control_routes(router, server, limit)
    _add_info_routes(router, server)
    return router


def _with_metadata_key(payload: dict[str, Any]) -> dict[str, Any]:
    """HTTP ``/reset`` and ``/step`` bodies always carry ``"metadata"`` (``null`` when empty), as 0.10's
    response models do; the ``observation`` itself is unchanged."""
    payload.setdefault("metadata", None)
    return payload


def _add_control_routes(router: APIRouter, server: HTTPEnvServer, limit: int) -> None:
    dispatcher = server.dispatcher

    @router.post("/reset", openapi_extra=_RESET_DOC, summary="Start an episode")
    async def reset(request: Request) -> Response:
        try:
            body = await _read_json(request, limit)
            timeout_s = parse_timeout(body.get("timeout_s"))
            kwargs = {k: v for k, v in body.items() if k not in ("timeout_s", "request_id")}
            sid = request.headers.get(SESSION_HEADER)
            if sid:
                session = (
                    await server.sessions.create("http") if sid == "new" else server.sessions.get(sid)
                )
                payload = _with_metadata_key(await dispatcher.reset(session, kwargs, timeout_s=timeout_s))
                payload["session_id"] = session.id
                resp = _JSON(_with_request_id(payload, body))
                resp.headers[SESSION_HEADER] = session.id
                return resp
            async with server.ephemeral_session() as session:
                payload = await dispatcher.reset(session, kwargs, timeout_s=timeout_s)
            return _JSON(_with_request_id(_with_metadata_key(payload), body))
        except OpenEnvError as err:
            return error_response(err)

    @router.post("/step", openapi_extra=_STEP_DOC, summary="Apply one action")
    async def step(request: Request) -> Response:
        try:
            body = await _read_json(request, limit)
            if "action" not in body:
                raise ActionValidationError(
                    "Missing 'action'",
                    errors=[{"type": "missing", "loc": ["body", "action"], "msg": "Field required"}],
                )
            timeout_s = parse_timeout(body.get("timeout_s"))
            extra = {k: v for k, v in body.items() if k not in ("action", "timeout_s", "request_id")}
            sid = request.headers.get(SESSION_HEADER)
            if sid:
                session = server.sessions.get(sid)
                payload = await dispatcher.step(session, body["action"], timeout_s=timeout_s, kwargs=extra)
            else:
                async with server.ephemeral_session() as session:
                    payload = await dispatcher.step(
                        session, body["action"], timeout_s=timeout_s, require_reset=False, kwargs=extra
                    )
            return _JSON(_with_request_id(_with_metadata_key(payload), body))
        except OpenEnvError as err:
            return error_response(err)

    @router.get("/state", summary="State of the episode")
    async def state(request: Request) -> Response:
        try:
            sid = request.headers.get(SESSION_HEADER)
            if sid:
                return _JSON(await dispatcher.state(server.sessions.get(sid)))
            async with server.ephemeral_session() as session:
                return _JSON(await dispatcher.state(session))
        except OpenEnvError as err:
            return error_response(err)


def _add_info_routes(router: APIRouter, server: HTTPEnvServer) -> None:
    @router.get("/schema", summary="Action, observation and state JSON schemas")
    async def schema() -> Response:
        # "reset" (additive, ours): the reset parameters' schema, for remote forms such as the studio's
        return _JSON({**server.schemas(), "reset": server.reset_params_schema()})

    @router.get("/metadata", summary="Environment metadata")
    async def metadata() -> Response:
        try:
            return _JSON(await server.metadata())
        except OpenEnvError as err:
            return error_response(err)

    @router.get("/health", summary="Liveness")
    async def health() -> Response:
        body: dict[str, Any] = {
            "status": "healthy",
            "sessions": {"active": server.sessions.active, "max": server.sessions.max_sessions},
        }
        details = getattr(server.env_cls, "health_details", None)  # an env class's own fields (cheap, sync)
        if callable(details):
            body.update(details())
        return _JSON(body)

    @router.get("/sessions", summary="Open sessions")
    async def sessions() -> Response:
        return _JSON(
            {
                "active": server.sessions.active,
                "max": server.sessions.max_sessions,
                "idle_timeout_s": server.sessions.idle_timeout_s,
                "sessions": server.list_sessions(),
            }
        )

    @router.delete("/sessions/{session_id}", summary="Close a session")
    async def close_session(session_id: str) -> Response:
        try:
            server.sessions.get(session_id)
        except OpenEnvError as err:
            return error_response(err)
        await server.close_session(session_id, f"Session {session_id} was closed (DELETE /sessions)")
        return _JSON({"closed": session_id})

    @router.get("/", include_in_schema=False)
    async def root() -> Response:
        if server.web_mounted:
            return RedirectResponse("/web")
        return JSONResponse({"docs": "/docs", "health": "/health"})
