"""Turn observations, actions and states into JSON text, never failing.

Pydantic models and dataclasses become objects; anything JSON cannot hold is replaced by a
marker object ``{"__openenv_unserializable__": "<type>", "repr": "<repr, truncated>"}`` so a
strange observation is stored (and visible) instead of crashing the training loop. NaN and
Infinity become ``null``, as on the wire.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import Any

import orjson

__all__ = ["MARKER", "canonical_hash", "dumps", "loads", "to_jsonable"]

MARKER = "__openenv_unserializable__"
_REPR_LIMIT = 2000
_OPTS = orjson.OPT_NON_STR_KEYS
_INT_RANGE = (-(2**63), 2**64)


def _marker(value: Any) -> dict[str, str]:
    text = repr(value)
    if len(text) > _REPR_LIMIT:
        text = text[:_REPR_LIMIT] + "..."
    return {MARKER: type(value).__qualname__, "repr": text}


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """Plain JSON value for ``value`` (dict/list/str/int/float/bool/None), markers where needed."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if _INT_RANGE[0] <= value < _INT_RANGE[1] else _marker(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if _depth > 64:
        return _marker(value)
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else str(k)): to_jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, _depth + 1) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return to_jsonable(dump(), _depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return to_jsonable(fields, _depth + 1)
    return _marker(value)


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump()
    return _marker(value)


def dumps(value: Any) -> str:
    """Compact JSON text of ``value`` (orjson; the slow ``to_jsonable`` walk only when needed)."""
    try:
        return orjson.dumps(value, default=_default, option=_OPTS).decode()
    except (orjson.JSONEncodeError, TypeError):  # too deep, a huge int, a bad key: walk and mark
        return orjson.dumps(to_jsonable(value), option=_OPTS).decode()


def loads(text: str | bytes | None) -> Any:
    """Inverse of ``dumps`` (``None`` stays ``None``)."""
    return None if text is None else orjson.loads(text)


def canonical_hash(value: Any) -> str:
    """SHA-256 of the canonical JSON form (sorted keys) of ``value``."""
    return hashlib.sha256(orjson.dumps(to_jsonable(value), option=_OPTS | orjson.OPT_SORT_KEYS)).hexdigest()
