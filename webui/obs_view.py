"""Observation values -> a bounded display tree (text, code, images, collapsible JSON, "show all").

What a string is comes from its JSON schema when there is one (``docs/authoring.md``, "How values
are shown"): ``"format": "code"`` (optional ``contentMediaType``) is code, ``"format": "multiline"``
is text, ``"contentEncoding": "base64"`` with an image ``contentMediaType``, or ``"format":
"image"``, is an image. Without a schema a data URL or base64 PNG/JPEG/GIF/WebP is an image and a
string with a newline is preformatted text. Never by field name. Long text is folded.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from webui.templating import format_number

PREVIEW_CHARS = 2000
LONG_LINE = 80
MAX_ITEMS = 50
MAX_NODES = 400
MAX_DEPTH = 8
FOLD_LINES = 12  # text longer than this many lines, or FOLD_CHARS characters, starts folded
FOLD_CHARS = 800
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_IMAGE_URL = re.compile(r"data:image/(png|jpeg|jpg|gif|webp);base64,[A-Za-z0-9+/=\s]{16}")
_IMAGE_MAGIC = (("iVBORw0KGg", "png"), ("/9j/", "jpeg"), ("R0lGOD", "gif"), ("UklGR", "webp"))
_B64 = re.compile(r"[A-Za-z0-9+/]{64,}={0,2}")


@dataclass(eq=False)
class View:
    """One value to display: ``kind`` picks the template branch; ``path`` is its JSON pointer."""

    kind: str
    path: str
    text: str = ""
    size: int = 0
    truncated: bool = False
    src: str = ""
    children: list[tuple[str, View]] = field(default_factory=list)
    hidden: int = 0
    folded: bool = False
    lines: int = 0
    language: str = ""


def pointer(parts: list[str | int]) -> str:
    """RFC 6901 JSON pointer for a path."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve_pointer(value: Any, ptr: str) -> Any:
    """The value at JSON pointer ``ptr``; raises KeyError when it does not exist."""
    if ptr in ("", "/"):
        return value
    for raw in ptr.lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise KeyError(ptr)
    return value


def build_view(value: Any, path: str = "", *, full: bool = False, schema: Any = None) -> View:
    """Display tree for ``value``; ``full`` lifts the preview limits (for "show all"); ``schema``
    is the JSON schema of the value (its ``$defs`` are followed), which decides what strings are."""
    budget = [MAX_NODES * 50 if full else MAX_NODES]
    root = schema if isinstance(schema, dict) else None
    return _view(value, path, 0, budget, full, _resolve(root, root), root)


def _resolve(schema: Any, root: dict[str, Any] | None) -> dict[str, Any] | None:
    """``schema`` with its ``$ref`` followed and an optional's non-null variant merged in."""
    for _ in range(8):  # bounded: a schema may refer to itself
        if not isinstance(schema, dict):
            return None
        ref = schema.get("$ref")
        if isinstance(ref, str) and root is not None:
            name = ref.rsplit("/", 1)[-1]
            target = (root.get("$defs") or root.get("definitions") or {}).get(name)
            schema = {**(target if isinstance(target, dict) else {}), **{k: v for k, v in schema.items() if k != "$ref"}}
            continue
        variants = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(variants, list):
            real = [v for v in variants if isinstance(v, dict) and v.get("type") != "null"]
            if len(real) == 1:
                schema = {**real[0], **{k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}}
                continue
        return schema
    return None


def _child(schema: dict[str, Any] | None, key: str | int, root: dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    if isinstance(key, int):
        return _resolve(schema.get("items"), root)
    props = schema.get("properties")
    sub = props.get(key) if isinstance(props, dict) else None
    if sub is None and isinstance(schema.get("additionalProperties"), dict):
        sub = schema["additionalProperties"]
    return _resolve(sub, root)


def schema_at(schema: Any, ptr: str) -> dict[str, Any] | None:
    """The (resolved) schema of the value at JSON pointer ``ptr`` of a value of ``schema``; a
    schema with its ``$defs`` kept so ``build_view`` can go on resolving below it."""
    root = schema if isinstance(schema, dict) else None
    node = _resolve(root, root)
    if ptr not in ("", "/"):
        for raw in ptr.lstrip("/").split("/"):
            part = raw.replace("~1", "/").replace("~0", "~")
            if node is None:
                return None
            kind = node.get("type")
            node = _child(node, int(part) if kind == "array" and part.isdigit() else part, root)
    if node is None:
        return None
    defs = (root or {}).get("$defs")
    return {**node, "$defs": defs} if defs and "$defs" not in node else node


def image_src(text: str) -> str:
    """A data URL when ``text`` is an image (data URL or bare base64 PNG/JPEG/GIF/WebP), else ''."""
    head = text[:96]
    if _IMAGE_URL.match(head):
        return text
    for magic, fmt in _IMAGE_MAGIC:
        if text.startswith(magic) and _B64.match(head):
            return f"data:image/{fmt};base64,{text}"
    return ""


def _view(value: Any, path: str, depth: int, budget: list[int], full: bool,
          schema: dict[str, Any] | None = None, root: dict[str, Any] | None = None) -> View:
    budget[0] -= 1
    root = root if root is not None else schema
    if value is None:
        return View("null", path, "null")
    if isinstance(value, bool):
        return View("bool", path, "true" if value else "false")
    if isinstance(value, (int, float)):
        exact = repr(value)
        shown = format_number(value) if isinstance(value, float) else exact
        return View("number", path, shown, src=exact if shown != exact else "")  # src: the exact value, on hover
    if isinstance(value, str):
        return _string(value, path, full, schema)
    if isinstance(value, list) and (schema or {}).get("format") == "chat" and all(isinstance(m, dict) for m in value):
        return _chat(value, path, depth, budget, full, root)
    if isinstance(value, (dict, list)):
        v = View("object" if isinstance(value, dict) else "array", path, size=len(value))
        if depth >= MAX_DEPTH and not full:
            v.hidden = len(value)
            return v
        limit = len(value) if full else MAX_ITEMS
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, sub in itertools.islice(items, limit):
            if budget[0] <= 0:
                break
            sub_schema = _child(schema, key, root)
            v.children.append((str(key), _view(sub, path + pointer([key]), depth + 1, budget, full, sub_schema, root)))
        v.hidden = len(value) - len(v.children)
        return v
    return View("string", path, repr(value))


def _chat(messages: list[dict[str, Any]], path: str, depth: int, budget: list[int], full: bool,
          root: dict[str, Any] | None) -> View:
    """A conversation (a list its schema marks ``"format": "chat"``): one (label, content) per message,
    the label being the role and any tool calls (``name(arguments)``)."""
    v = View("chat", path, size=len(messages))
    for i, msg in enumerate(messages if full else messages[-MAX_ITEMS:]):
        calls = [c.get("function", c) for c in msg.get("tool_calls") or [] if isinstance(c, dict)]
        label = str(msg.get("role", "?"))
        if calls:
            label += " → " + ", ".join(f"{c.get('name')}({c.get('arguments')})" for c in calls)
        content = msg.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        index = i if full else len(messages) - min(len(messages), MAX_ITEMS) + i
        v.children.append((label, _view(content if content is not None else "", path + pointer([index, "content"]),
                                        depth + 1, budget, full, {"format": "multiline"}, root)))
    v.hidden = len(messages) - len(v.children)
    return v


def declared_image(value: str, schema: dict[str, Any] | None) -> str:
    """A data URL for a string its schema declares an image (base64 + image media type, or
    ``"format": "image"``), else ''."""
    if not schema:
        return ""
    media = str(schema.get("contentMediaType") or "").lower()
    if schema.get("contentEncoding") == "base64" and media in IMAGE_TYPES:
        if value.startswith("data:"):
            return image_src(value)
        compact = value.strip()
        return f"data:{media};base64,{compact}" if compact and _B64_ONLY.fullmatch(compact[:4096]) else ""
    if schema.get("format") == "image":
        return image_src(value.strip())
    return ""


_B64_ONLY = re.compile(r"[A-Za-z0-9+/=\s]+")


def _string(value: str, path: str, full: bool, schema: dict[str, Any] | None = None) -> View:
    fmt = (schema or {}).get("format")
    src = declared_image(value, schema) or ("" if fmt in ("code", "multiline") else image_src(value))
    if src:
        return View("image", path, size=len(value), src=src)
    if fmt == "code":
        kind = "code"
    elif fmt == "multiline" or "\n" in value or len(value) > LONG_LINE:
        kind = "text"
    else:
        kind = "string"
    v = View(kind, path, value, size=len(value))
    if kind == "code":
        v.language = str((schema or {}).get("contentMediaType") or "")
    if kind in ("text", "code"):
        v.lines = value.count("\n") + 1
        v.folded = not full and (v.lines > FOLD_LINES or len(value) > FOLD_CHARS)
    if not full and len(value) > PREVIEW_CHARS:
        v.text, v.truncated = value[:PREVIEW_CHARS], True
    return v
