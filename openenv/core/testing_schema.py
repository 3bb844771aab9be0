"""The JSON-schema subset pydantic emits: validate a wire value, and make a sample value.

Covers ``type``, ``properties``/``required``/``additionalProperties``, ``items``/``prefixItems``,
``enum``/``const``, ``anyOf``/``oneOf``/``allOf``, local ``$ref`` and numeric/length bounds —
enough to check a server's replies against its own ``/schema`` and to build a valid action.
"""

from __future__ import annotations

from typing import Any

__all__ = ["sample_value", "schema_errors"]

_MAX_DEPTH = 32


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < _MAX_DEPTH:
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return {}
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        schema = target
        seen += 1
    return schema if isinstance(schema, dict) else {}


def _is_type(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float))
    return True


def schema_errors(
    value: Any, schema: Any, *, root: dict[str, Any] | None = None, path: str = "$", depth: int = 0
) -> list[str]:
    """Messages for every way ``value`` breaks ``schema`` (empty when it conforms)."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return []
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    errors: list[str] = []

    def sub(v: Any, s: Any, p: str) -> list[str]:
        return schema_errors(v, s, root=root, path=p, depth=depth + 1)

    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options and all(sub(value, o, path) for o in options):
            errors.append(f"{path}: matches none of the {key} options")
    for option in schema.get("allOf") or []:
        errors += sub(value, option, path)
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: expected {schema['const']!r}")
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not any(_is_type(value, k) for k in kinds):
            return [*errors, f"{path}: expected {'/'.join(map(str, kinds))}, got {type(value).__name__}"]
    if isinstance(value, dict):
        errors += _object_errors(value, schema, path, sub)
    elif isinstance(value, list):
        errors += _array_errors(value, schema, path, sub)
    elif isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']}")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        errors += _number_errors(value, schema, path)
    return errors


def _object_errors(value: dict[str, Any], schema: dict[str, Any], path: str, sub: Any) -> list[str]:
    errors = [f"{path}: missing required field {k!r}" for k in schema.get("required") or [] if k not in value]
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            errors += sub(item, props[key], f"{path}.{key}")
        elif extra is False:
            errors.append(f"{path}: unexpected field {key!r}")
        elif isinstance(extra, dict):
            errors += sub(item, extra, f"{path}.{key}")
    return errors


def _array_errors(value: list[Any], schema: dict[str, Any], path: str, sub: Any) -> list[str]:
    errors = []
    prefix = schema.get("prefixItems") or []
    for i, item in enumerate(value):
        if i < len(prefix):
            errors += sub(item, prefix[i], f"{path}[{i}]")
        elif isinstance(schema.get("items"), dict):
            errors += sub(item, schema["items"], f"{path}[{i}]")
    if len(value) < schema.get("minItems", 0):
        errors.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(f"{path}: more than {schema['maxItems']} items")
    return errors


def _number_errors(value: float, schema: dict[str, Any], path: str) -> list[str]:
    checks = (
        ("minimum", lambda b: value < b, "below"),
        ("maximum", lambda b: value > b, "above"),
        ("exclusiveMinimum", lambda b: value <= b, "not above"),
        ("exclusiveMaximum", lambda b: value >= b, "not below"),
    )
    return [f"{path}: {value} {word} {schema[k]}" for k, bad, word in checks if k in schema and bad(schema[k])]


def sample_value(schema: Any, *, root: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """A small value that conforms to ``schema``: defaults first, then the simplest valid value."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return None
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        options = [o for o in schema.get(key) or [] if _resolve(o, root).get("type") != "null"]
        if options:
            return sample_value(options[0], root=root, depth=depth + 1)
    if schema.get("allOf"):
        return sample_value(schema["allOf"][0], root=root, depth=depth + 1)
    kinds = schema.get("type", "object")
    kind = next((k for k in kinds if k != "null"), "null") if isinstance(kinds, list) else kinds
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: sample_value(props.get(k, {}), root=root, depth=depth + 1) for k in schema.get("required") or []}
    if kind == "array":
        count = schema.get("minItems", 0)
        return [sample_value(schema.get("items", {}), root=root, depth=depth + 1) for _ in range(count)]
    if kind == "string":
        return "a" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        return _sample_number(schema, kind)
    if kind == "boolean":
        return False
    return None


def _sample_number(schema: dict[str, Any], kind: str) -> float | int:
    low = schema.get("minimum")
    if low is None and "exclusiveMinimum" in schema:
        low = schema["exclusiveMinimum"] + (1 if kind == "integer" else 0.5)
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    value = low if low is not None else (0 if high is None or high > 0 else high - 1)
    return int(value) if kind == "integer" else float(value)
