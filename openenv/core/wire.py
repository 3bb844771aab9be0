"""The JSON codec both sides of the wire use (client and server): strict parse, fast dump.

It lives outside ``env_server`` so a training script's client imports no server code.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any

import orjson
from pydantic import BaseModel, TypeAdapter

from openenv.core.errors import ProtocolError

__all__ = ["adapter", "dumps", "loads", "to_jsonable"]


def loads(data: str | bytes) -> Any:
    """Parse JSON text strictly: no NaN/Infinity, bounded nesting (orjson's 1024 levels)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"Invalid JSON: {exc.msg}", code="INVALID_JSON") from exc


def dumps(obj: Any) -> bytes:
    """Serialise to JSON bytes (NaN/Infinity become null)."""
    return orjson.dumps(obj, default=_fallback, option=orjson.OPT_NON_STR_KEYS)


def _fallback(obj: Any) -> Any:
    return to_jsonable(obj)


@lru_cache(maxsize=256)
def adapter(cls: type) -> TypeAdapter:
    """A cached pydantic TypeAdapter for ``cls``."""
    return TypeAdapter(cls)


def to_jsonable(obj: Any) -> Any:
    """A JSON-compatible form of a model, dataclass, dict or scalar."""
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return adapter(type(obj)).dump_python(obj, mode="json")
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    if isinstance(obj, (dict, list, str, int, float, bool)) or obj is None:
        return obj
    return repr(obj)
