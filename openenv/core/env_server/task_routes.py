"""The published 0.10 Task API (ORS-compatible task discovery), in every server mode.

``GET /list_environments``, ``GET /{env_name}/splits`` and ``POST /{env_name}/tasks``,
``/num_tasks``, ``/task``, ``/task_range`` call the environment's :class:`TaskProvider` methods
(sync in a worker thread, async awaited) on a short-lived environment — the one a stateless
``/reset`` gets; an instance server's own instance — under the step deadline. Failures are our
coded errors: ``VALIDATION_ERROR`` 422, ``UNKNOWN_ENV`` 404, ``INVALID_TASK_INDEX`` 400 (the
method raised ``IndexError``), ``NOT_IMPLEMENTED`` 501, ``TIMEOUT`` 504, ``EXECUTION_ERROR`` 500.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError

from openenv.core.env_server.http_routes import _JSON, _read_json, error_response
from openenv.core.env_server.serialization import _clean_errors, to_jsonable
from openenv.core.env_server.types import (
    GetTaskRangeRequest,
    GetTaskRequest,
    ListTasksRequest,
    NumTasksRequest,
)
from openenv.core.errors import ActionValidationError, OpenEnvError

__all__ = ["build_task_router", "task_env_name"]

_SPLIT_TYPES = ("train", "validation", "test")
_TAG = ["Task API"]


def task_env_name(server: Any) -> str:
    """The name served under ``/{env_name}/…``: ``env_name``, else the class's (or factory's) name."""
    if server.env_name:
        return server.env_name
    if server.instance is not None:
        return type(server.instance).__name__
    factory = server._factory
    return factory.__name__ if isinstance(factory, type) else getattr(factory, "__name__", "environment")


def _jsonable(obj: Any) -> Any:
    """Tasks as JSON: models and dataclasses dumped, other objects by their attributes (as 0.10)."""
    if isinstance(obj, (list, tuple)):
        return [_jsonable(item) for item in obj]
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if obj is None or isinstance(obj, (str, int, float, bool, BaseModel)) or dataclasses.is_dataclass(obj):
        return to_jsonable(obj)
    if hasattr(obj, "__dict__"):
        return {k: _jsonable(v) for k, v in vars(obj).items()}
    return str(obj)


def _split(entry: Any) -> Any:
    if isinstance(entry, str):
        return {"name": entry, "type": entry if entry in _SPLIT_TYPES else "validation"}
    if isinstance(entry, (dict, BaseModel)):
        return _jsonable(entry)
    return {"name": str(entry), "type": "validation"}


@contextlib.contextmanager
def _translated(name: str) -> Iterator[None]:
    try:
        yield
    except NotImplementedError:
        raise OpenEnvError(f"{name} is not supported for this environment", code="NOT_IMPLEMENTED") from None
    except IndexError:
        raise OpenEnvError("Invalid task index", code="INVALID_TASK_INDEX") from None


async def _awaited(name: str, value: Awaitable[Any]) -> Any:
    with _translated(name):
        return await value


def _guard(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` with ``NotImplementedError``/``IndexError`` as coded errors (sync stays sync)."""
    if inspect.iscoroutinefunction(method):
        return lambda *args: _awaited(name, method(*args))

    def run(*args: Any) -> Any:
        with _translated(name):
            result = method(*args)
        return _awaited(name, result) if inspect.isawaitable(result) else result

    return run


def _doc(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    return {"requestBody": {"content": {"application/json": {"schema": schema}}, "required": True}}


def build_task_router(server: Any) -> APIRouter:
    """The Task API routes bound to ``server`` (an ``HTTPEnvServer``)."""
    router = APIRouter(tags=_TAG)
    limit = server.max_message_bytes

    def check_name(env_name: str) -> None:
        if env_name.lower() != task_env_name(server).lower():
            raise OpenEnvError(f"unknown environment {env_name!r}", code="UNKNOWN_ENV")

    async def body(request: Request, model: type[BaseModel]) -> Any:
        data = await _read_json(request, limit)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            errors = [{**err, "loc": ["body", *err["loc"]]} for err in _clean_errors(exc)]
            raise ActionValidationError("Invalid request body", errors=errors) from None

    async def call(name: str, *args: Any) -> Any:
        async with server.ephemeral_session() as session:
            method = getattr(session.env, name, None)
            if not callable(method):
                raise OpenEnvError(f"{name} is not supported for this environment", code="NOT_IMPLEMENTED")
            return await server.dispatcher.call(session, _guard(name, method), *args)

    async def answer(env_name: str, request: Request | None, model: type[BaseModel] | None,
                     run: Callable[[Any], Awaitable[Any]]) -> Response:
        """Validate the body, check the name, run; any failure is its coded error."""
        try:
            req = await body(request, model) if model is not None and request is not None else None
            check_name(env_name)
            return _JSON(await run(req))
        except OpenEnvError as err:
            return error_response(err)

    @router.get("/list_environments", summary="Names of the served environments")
    async def list_environments() -> Response:
        return _JSON([task_env_name(server)])

    @router.get("/{env_name}/splits", summary="Task splits")
    async def splits(env_name: str) -> Response:
        async def run(_: Any) -> Any:
            return [_split(entry) for entry in await call("list_splits") or []]

        return await answer(env_name, None, None, run)

    @router.post("/{env_name}/tasks", openapi_extra=_doc(ListTasksRequest), summary="All tasks of a split")
    async def tasks(env_name: str, request: Request) -> Response:
        async def run(req: Any) -> Any:
            return {"tasks": _jsonable(await call("list_tasks", req.split)), "env_name": task_env_name(server)}

        return await answer(env_name, request, ListTasksRequest, run)

    @router.post("/{env_name}/num_tasks", openapi_extra=_doc(NumTasksRequest), summary="Number of tasks in a split")
    async def num_tasks(env_name: str, request: Request) -> Response:
        async def run(req: Any) -> Any:
            return {"num_tasks": _jsonable(await call("num_tasks", req.split))}

        return await answer(env_name, request, NumTasksRequest, run)

    @router.post("/{env_name}/task", openapi_extra=_doc(GetTaskRequest), summary="One task by index")
    async def task(env_name: str, request: Request) -> Response:
        async def run(req: Any) -> Any:
            return {"task": _jsonable(await call("get_task", req.split, req.index))}

        return await answer(env_name, request, GetTaskRequest, run)

    @router.post("/{env_name}/task_range", openapi_extra=_doc(GetTaskRangeRequest), summary="Tasks [start, stop) of a split")
    async def task_range(env_name: str, request: Request) -> Response:
        async def run(req: Any) -> Any:
            return {"tasks": _jsonable(await call("get_task_range", req.split, req.start, req.stop))}

        return await answer(env_name, request, GetTaskRangeRequest, run)

    return router
