"""Infer an environment's action, observation and state classes from its type hints."""

from __future__ import annotations

import contextlib
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openenv.core.env_server.serialization import to_jsonable
from openenv.core.env_server.types import State

__all__ = ["EnvSource", "method_annotation", "parameter_schema", "resolve_env", "returned_class", "state_class"]


def _hints(obj: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(obj)
    except Exception:  # unresolved forward references: no hints rather than a crash
        return {}


@dataclass(frozen=True)
class EnvSource:
    """What ``create_app``/``check_env`` were given: a factory (a class counts) or one instance."""

    factory: Callable[[], Any] | None
    instance: Any
    env_cls: type | None


def resolve_env(env: Any) -> EnvSource:
    """Tell an environment class, a zero-argument factory and an instance apart."""
    if isinstance(env, type):
        return EnvSource(factory=env, instance=None, env_cls=env)
    if callable(env) and not hasattr(env, "step"):
        return EnvSource(factory=env, instance=None, env_cls=returned_class(env))
    return EnvSource(factory=None, instance=env, env_cls=type(env))


def method_annotation(cls: type | None, method: str, param: str) -> type | None:
    """The class annotated on ``cls.method``'s ``param`` (``"action"``: its first parameter; ``"return"``)."""
    if cls is None:
        return None
    fn = getattr(cls, method, None)
    if fn is None:
        return None
    hints = _hints(fn)
    if param == "action":
        names = [n for n in inspect.signature(fn).parameters if n != "self"]
        param = names[0] if names else param
    found = hints.get(param)
    return found if isinstance(found, type) else None


def returned_class(factory: Callable[[], Any]) -> type | None:
    """The class a factory's return annotation names, if any."""
    found = _hints(factory).get("return")
    return found if isinstance(found, type) else None


def state_class(cls: type | None) -> type:
    """The class the ``state`` property returns (``State`` when not annotated)."""
    prop = getattr(cls, "state", None) if cls else None
    if isinstance(prop, property) and prop.fget is not None:
        found = _hints(prop.fget).get("return")
        if isinstance(found, type):
            return found
    return State


def parameter_schema(param: inspect.Parameter) -> dict[str, Any]:
    """JSON schema of one reset parameter from its annotation and default."""
    from pydantic import TypeAdapter

    schema: dict[str, Any] = {}
    if param.annotation is not inspect.Parameter.empty:
        with contextlib.suppress(Exception):
            schema = TypeAdapter(param.annotation).json_schema()
    if param.default is not inspect.Parameter.empty:
        schema["default"] = to_jsonable(param.default)
    return schema
