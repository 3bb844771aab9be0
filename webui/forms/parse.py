"""Submitted form fields -> a typed value, walking the same node tree the form was rendered from."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from webui.forms.bind import Invalid, escape_key
from webui.forms.schema import MISSING, Node

FormData = Mapping[str, Sequence[str]]


def parse_form(node: Node, form: FormData, *, prefix: str = "a") -> tuple[Any, list[dict[str, Any]]]:
    """Read the fields under ``prefix`` back into a value.

    Returns ``(value, errors)``; ``errors`` are pydantic-shaped (``loc``, ``msg``) for input that could
    not be converted, and the value then holds :class:`Invalid` markers so the form can show it again.
    """
    errors: list[dict[str, Any]] = []
    value = _parse(node, form, prefix, (), errors)
    return value, errors


def strip_invalid(value: Any) -> Any:
    """Replace :class:`Invalid` markers by their raw text (for raw-JSON mode)."""
    if isinstance(value, Invalid):
        return value.raw
    if isinstance(value, dict):
        return {k: strip_invalid(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_invalid(v) for v in value]
    return value


def _one(form: FormData, name: str) -> str | None:
    values = form.get(name)
    if not values:
        return None
    return values[-1] if not isinstance(values, str) else values


def _parse(node: Node, form: FormData, name: str, loc: tuple[Any, ...], errors: list[dict[str, Any]]) -> Any:
    kind = node.kind
    if kind == "const":
        return node.const
    if kind == "object":
        out: dict[str, Any] = {}
        for child in node.children:
            key = child.key or ""
            v = _parse(child, form, f"{name}.{escape_key(key)}", (*loc, key), errors)
            if v is not MISSING:
                out[key] = v
        return out
    if kind == "optional" and node.inner is not None:
        if _one(form, f"{name}.~null") is not None:
            return None
        return _parse(node.inner, form, name, loc, errors)
    if kind == "list" and node.item is not None:
        rows = [_parse(node.item, form, f"{name}.{i}", (*loc, i), errors) for i in _row_indices(form, name)]
        return [None if v is MISSING else v for v in rows]
    if kind == "union":
        raw = _one(form, f"{name}.~variant")
        index = int(raw) if raw is not None and raw.isdigit() and int(raw) < len(node.variants) else 0
        return _parse(node.variants[index], form, f"{name}.~{index}", loc, errors)
    if kind == "boolean":
        values = form.get(name) or ()
        return MISSING if not values else "true" in values
    raw = _one(form, name)
    if raw is None:
        return MISSING
    return _scalar(node, raw, loc, errors)


def _scalar(node: Node, raw: str, loc: tuple[Any, ...], errors: list[dict[str, Any]]) -> Any:
    kind = node.kind
    if kind in ("string", "text", "code"):
        return raw.replace("\r\n", "\n") if kind != "string" else raw
    text = raw.strip()
    if text == "":
        return MISSING
    try:
        if kind == "integer":
            return int(text) if re.fullmatch(r"[+-]?\d+", text) else _int_from_float(text)
        if kind == "number":
            number = float(text)
            return int(number) if number.is_integer() and re.fullmatch(r"[+-]?\d+", text) else number
        if kind in ("enum", "json"):
            return json.loads(text)
    except ValueError as exc:
        message = {"integer": "Enter a whole number", "number": "Enter a number"}.get(
            kind, f"Invalid JSON: {exc.args[0] if exc.args else exc}")
        errors.append({"loc": loc, "msg": message, "type": "form_parsing"})
        return Invalid(raw, message)
    return raw


def _int_from_float(text: str) -> int:
    number = float(text)
    if not number.is_integer():
        raise ValueError(text)
    return int(number)


def _row_indices(form: FormData, name: str) -> list[int]:
    pattern = re.compile(re.escape(name) + r"\.(\d+)\.~row$")
    found = {int(m.group(1)) for key in form for m in [pattern.match(key)] if m}
    return sorted(found)
