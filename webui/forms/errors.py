"""Map validation errors (pydantic ``loc`` paths) back onto the bound form fields they concern."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from webui.forms.bind import Bound

_STRIP = ("body", "action", "data")


def attach_errors(root: Bound, errors: Iterable[dict[str, Any]]) -> list[str]:
    """Append each error's message to the deepest field its ``loc`` reaches.

    Errors about a union variant that is not the selected one are dropped when the selected
    variant has errors of its own. Returns messages that reach no field below the root (shown
    at the top of the form).
    """
    placed: list[tuple[Bound, str, Bound | None]] = []
    for err in errors:
        loc = list(err.get("loc") or ())
        message = str(err.get("msg") or err.get("message") or "invalid value")
        target, union, rest = _walk(root, _trim(root, loc))
        if rest:
            message = f"{'.'.join(str(p) for p in rest)}: {message}"
        placed.append((target, message, union))
    on_selected = {id(t) for t, _, union in placed if union is None}
    loose: list[str] = []
    for target, message, union in placed:
        if union is not None:
            if any(id(b) in on_selected for b in union.children[union.selected].walk()):
                continue
            target, message = union, f"{_label(union, target)}: {message}"
        if target is root and root.kind == "object":
            loose.append(message)
        elif message not in target.errors:
            target.errors.append(message)
    return loose


def _trim(root: Bound, loc: list[Any]) -> list[Any]:
    keys = {c.node.key for c in root.children} if root.kind == "object" else set()
    while loc and loc[0] in _STRIP and loc[0] not in keys:
        loc = loc[1:]
    return loc


def _label(union: Bound, target: Bound) -> str:
    for i, variant in enumerate(union.children):
        if any(b is target for b in variant.walk()):
            path = target.name[len(variant.name):].lstrip(".")
            return union.node.labels[i] + (f".{path}" if path else "")
    return union.node.title


def _walk(b: Bound, loc: list[Any]) -> tuple[Bound, Bound | None, list[Any]]:
    off_union: Bound | None = None
    i = 0
    for _ in range(4 * len(loc) + 8):
        if b.kind == "optional" and b.children and not b.is_null:
            b = b.children[0]
            continue
        if i >= len(loc):
            break
        part = loc[i]
        if b.kind == "object":
            nxt = next((c for c in b.children if c.node.key == part), None)
        elif b.kind == "list":
            nxt = b.children[part] if isinstance(part, int) and 0 <= part < len(b.children) else None
        elif b.kind == "union":
            index = _variant_index(b, part)
            if index is None:
                b = b.children[b.selected]
                continue
            if index != b.selected and off_union is None:
                off_union = b
            nxt = b.children[index]
        else:
            nxt = None
        if nxt is None:
            break
        b, i = nxt, i + 1
    return b, off_union, loc[i:]


def _variant_index(b: Bound, part: Any) -> int | None:
    node = b.node
    for i in range(len(node.variants)):
        if part == node.tags[i] or part == node.labels[i] or (
            isinstance(part, str) and node.type_names[i] and part.split("[", 1)[0] == node.type_names[i]
        ):
            return i
    return None
