"""Structured difference of two JSON-like values (observations, states).

    d = diff({"a": 1, "b": "x"}, {"a": 2, "c": True})
    d.changed   # [Change(path="a", before=1, after=2)]
    d.added     # [Change(path="c", after=True)]
    d.removed   # [Change(path="b", before="x")]

Paths read like ``messages[2].content``; long or multi-line strings that changed also get a
unified text diff. Values are compared after ``to_jsonable`` so models and dicts compare alike.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from .jsonable import to_jsonable

__all__ = ["Change", "Diff", "diff"]

LONG_TEXT = 80
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Change:
    """One differing path; ``text_diff`` is set for long strings."""

    path: str
    before: Any = None
    after: Any = None
    text_diff: str | None = None


@dataclass(frozen=True)
class Diff:
    """Added, removed and changed paths between two values (empty lists: equal)."""

    added: list[Change] = field(default_factory=list)
    removed: list[Change] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    @property
    def paths(self) -> list[str]:
        return sorted(c.path for c in (*self.added, *self.removed, *self.changed))

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        def one(c: Change) -> dict[str, Any]:
            out: dict[str, Any] = {"path": c.path, "before": c.before, "after": c.after}
            if c.text_diff is not None:
                out["text_diff"] = c.text_diff
            return out

        return {k: [one(c) for c in getattr(self, k)] for k in ("added", "removed", "changed")}

    def summary(self, limit: int = 5) -> str:
        """A one-line description such as ``changed: echoed_message; added: extra``."""
        parts = []
        for name in ("changed", "added", "removed"):
            items = getattr(self, name)
            if items:
                shown = ", ".join(c.path or "<root>" for c in items[:limit])
                more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
                parts.append(f"{name}: {shown}{more}")
        return "; ".join(parts) or "equal"


def _key_path(base: str, key: str) -> str:
    part = key if _IDENT.match(key) else repr(key)
    if not _IDENT.match(key):
        return f"{base}[{part}]"
    return f"{base}.{part}" if base else part


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return False
    return a == b


def _text_diff(a: str, b: str) -> str | None:
    if len(a) < LONG_TEXT and len(b) < LONG_TEXT and "\n" not in a and "\n" not in b:
        return None
    lines = difflib.unified_diff(
        a.splitlines(keepends=True), b.splitlines(keepends=True), "before", "after", lineterm=""
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _walk(a: Any, b: Any, path: str, out: Diff, depth: int) -> None:
    if isinstance(a, dict) and isinstance(b, dict) and depth < 200:
        for key in a.keys() - b.keys():
            out.removed.append(Change(_key_path(path, key), before=a[key]))
        for key in b.keys() - a.keys():
            out.added.append(Change(_key_path(path, key), after=b[key]))
        for key in a.keys() & b.keys():
            _walk(a[key], b[key], _key_path(path, key), out, depth + 1)
    elif isinstance(a, list) and isinstance(b, list) and depth < 200:
        for i in range(min(len(a), len(b))):
            _walk(a[i], b[i], f"{path}[{i}]", out, depth + 1)
        for i in range(len(b), len(a)):
            out.removed.append(Change(f"{path}[{i}]", before=a[i]))
        for i in range(len(a), len(b)):
            out.added.append(Change(f"{path}[{i}]", after=b[i]))
    elif not _equal(a, b):
        text = _text_diff(a, b) if isinstance(a, str) and isinstance(b, str) else None
        out.changed.append(Change(path, before=a, after=b, text_diff=text))


def diff(before: Any, after: Any) -> Diff:
    """The structured difference from ``before`` to ``after``."""
    out = Diff()
    _walk(to_jsonable(before), to_jsonable(after), "", out, 0)
    for items in (out.added, out.removed, out.changed):
        items.sort(key=lambda c: c.path)
    return out
