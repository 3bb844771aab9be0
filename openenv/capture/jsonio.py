"""JSON for the capture proxy's hot path: orjson, with the standard library where orjson refuses
(integers past 64 bits, ``NaN``/``Infinity`` literals an engine may send)."""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["dumps_json", "loads_json"]


def dumps_json(obj: Any) -> bytes:
    """Compact UTF-8 JSON (what Starlette's ``JSONResponse`` writes)."""
    try:
        return orjson.dumps(obj)
    except TypeError:  # orjson.JSONEncodeError: a big integer, a non-str key
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def loads_json(data: bytes | str) -> Any:
    """Parsed JSON; ``ValueError`` when it is not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
