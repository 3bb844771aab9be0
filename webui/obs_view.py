"""Observation values -> a bounded display tree (text, code, images, collapsible JSON, "show all")."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

PREVIEW_CHARS = 2000
LONG_LINE = 80
MAX_ITEMS = 50
MAX_NODES = 400
MAX_DEPTH = 8
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


def build_view(value: Any, path: str = "", *, full: bool = False) -> View:
    """Display tree for ``value``; ``full`` lifts the preview limits (for "show all")."""
    budget = [MAX_NODES * 50 if full else MAX_NODES]
    return _view(value, path, 0, budget, full)


def image_src(text: str) -> str:
    """A data URL when ``text`` is an image (data URL or bare base64 PNG/JPEG/GIF/WebP), else ''."""
    head = text[:96]
    if _IMAGE_URL.match(head):
        return text
    for magic, fmt in _IMAGE_MAGIC:
        if text.startswith(magic) and _B64.match(head):
            return f"data:image/{fmt};base64,{text}"
    return ""


def _view(value: Any, path: str, depth: int, budget: list[int], full: bool) -> View:
    budget[0] -= 1
    if value is None:
        return View("null", path, "null")
    if isinstance(value, bool):
        return View("bool", path, "true" if value else "false")
    if isinstance(value, (int, float)):
        return View("number", path, repr(value))
    if isinstance(value, str):
        return _string(value, path, full)
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
            v.children.append((str(key), _view(sub, path + pointer([key]), depth + 1, budget, full)))
        v.hidden = len(value) - len(v.children)
        return v
    return View("string", path, repr(value))


def _string(value: str, path: str, full: bool) -> View:
    src = image_src(value)
    if src:
        return View("image", path, size=len(value), src=src)
    multiline = "\n" in value or len(value) > LONG_LINE
    v = View("text" if multiline else "string", path, value, size=len(value))
    if not full and len(value) > PREVIEW_CHARS:
        v.text, v.truncated = value[:PREVIEW_CHARS], True
    return v
