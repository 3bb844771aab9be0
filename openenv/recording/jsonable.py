"""Turn observations, actions and states into JSON text, never failing.

Pydantic models and dataclasses become dicts; anything JSON cannot hold is replaced by a marker
object ``{"__openenv_unserializable__": "<type>", "repr": "<repr, truncated>"}`` so a strange
observation is stored (and visible) instead of crashing the training loop.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from typing import Any

__all__ = ["MARKER", "canonical_hash", "dumps", "loads", "to_jsonable"]

MARKER = "__openenv_unserializable__"
_REPR_LIMIT = 2000


def _marker(value: Any) -> dict[str, str]:
    text = repr(value)
    if len(text) > _REPR_LIMIT:
        text = text[:_REPR_LIMIT] + "..."
    return {MARKER: type(value).__qualname__, "repr": text}


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """Plain JSON value for ``value`` (dict/list/str/int/float/bool/None), markers where needed."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _marker(value)
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


def dumps(value: Any) -> str:
    """Compact JSON text of ``value``; the fast path skips the walk for plain JSON."""
    if isinstance(value, (dict, list, str, int, bool)) or value is None:
        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            pass  # something inside is not plain JSON: walk it below and mark it
    return json.dumps(to_jsonable(value), separators=(",", ":"), ensure_ascii=False)


def loads(text: str | None) -> Any:
    """Inverse of ``dumps`` (``None`` stays ``None``)."""
    return None if text is None else json.loads(text)


def canonical_hash(value: Any) -> str:
    """SHA-256 of the canonical JSON form (sorted keys) of ``value``."""
    text = json.dumps(to_jsonable(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
