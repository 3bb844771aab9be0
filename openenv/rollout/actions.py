"""A model's reply → an action: JSON found in the text, checked against the action schema.

The check is deliberately small (top-level ``required``, ``additionalProperties: false``, simple
``type``s, ``enum``): the env server validates every action again and its ``VALIDATION_ERROR``
is what finally decides (the loop retries with it).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .errors import InvalidReplyError

__all__ = ["check_action", "parse_json_action", "parse_tool_call"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),),
}  # fmt: skip


def _json_object(text: str) -> Any:
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        candidates.append(text[first : last + 1])
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return orjson.loads(candidate)
        except orjson.JSONDecodeError:
            continue
    raise InvalidReplyError("the reply holds no JSON object", completion=text)


def parse_json_action(text: str | None, schema: dict[str, Any]) -> dict[str, Any]:
    """The action in a reply (bare JSON, a fenced block, or the outermost ``{...}``), checked."""
    if not text or not text.strip():
        raise InvalidReplyError("the reply is empty", completion=text)
    value = _json_object(text)
    if not isinstance(value, dict):
        raise InvalidReplyError(f"the reply is JSON but not an object ({type(value).__name__})", completion=text)
    problems = check_action(value, schema)
    if problems:
        raise InvalidReplyError("; ".join(problems), completion=text)
    return value


def _type_ok(value: Any, kind: Any) -> bool:
    kinds = kind if isinstance(kind, list) else [kind]
    for k in kinds:
        allowed = _TYPES.get(k)
        if allowed is None:
            return True  # a type we do not check here
        if isinstance(value, bool) and k in ("integer", "number"):
            continue
        if isinstance(value, allowed):
            return True
    return False


def check_action(action: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Problems of ``action`` against the top level of ``schema`` (empty when none is found)."""
    problems = []
    props = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in action:
            problems.append(f"missing required field {name!r}")
    if schema.get("additionalProperties") is False:
        extra = sorted(set(action) - set(props))
        if extra:
            problems.append(f"unknown field(s) {', '.join(map(repr, extra))}")
    for name, value in action.items():
        prop = props.get(name)
        if not isinstance(prop, dict):
            continue
        if "type" in prop and not _type_ok(value, prop["type"]):
            problems.append(f"field {name!r} must be {prop['type']}, got {type(value).__name__}")
        if "enum" in prop and value not in prop["enum"]:
            problems.append(f"field {name!r} must be one of {prop['enum']}")
        if "const" in prop and value != prop["const"]:
            problems.append(f"field {name!r} must be {prop['const']!r}")
    return problems


def parse_tool_call(call: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The MCP ``call_tool`` step action for one OpenAI tool call (name known, arguments an object
    that passes the tool's input schema's top-level check)."""
    by_name = {t["name"]: t for t in tools}
    name = call.get("name")
    if name not in by_name:
        known = ", ".join(sorted(by_name)) or "none"
        raise InvalidReplyError(f"unknown tool {name!r} (tools: {known})", completion=call.get("arguments"))
    raw = call.get("arguments") or "{}"
    try:
        arguments = orjson.loads(raw) if isinstance(raw, str) else raw
    except orjson.JSONDecodeError:
        raise InvalidReplyError(f"the arguments of {name!r} are not JSON: {raw[:200]}", completion=raw) from None
    if not isinstance(arguments, dict):
        raise InvalidReplyError(f"the arguments of {name!r} must be a JSON object", completion=raw)
    problems = check_action(arguments, by_name[name].get("input_schema") or {})
    if problems:
        raise InvalidReplyError(f"tool {name!r}: " + "; ".join(problems), completion=raw)
    return {"type": "call_tool", "tool_name": name, "arguments": arguments}
