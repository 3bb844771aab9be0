"""Bind values and errors to a form node tree: the view model the widget macros render."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from webui.forms.schema import MISSING, Node

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]")


@dataclass(frozen=True)
class Invalid:
    """A submitted text that could not be converted; kept so the form shows it again."""

    raw: str
    message: str


def escape_key(key: str) -> str:
    """Percent-encode a property name so it is one safe segment of a form field name."""
    return _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), key) or "%"


def placeholder(depth: int) -> str:
    """The row-index placeholder used by list row templates at a list nesting ``depth``."""
    return f"__i{depth}__"


@dataclass(eq=False)
class Bound:
    """A node with its form ``name``, current ``value`` and ``errors``; sub-fields in ``children``."""

    node: Node
    name: str
    value: Any
    depth: int = 0
    errors: list[str] = field(default_factory=list)
    children: list[Bound] = field(default_factory=list)
    template: Bound | None = None
    selected: int = 0
    is_null: bool = False

    @property
    def kind(self) -> str:
        return self.node.kind

    @property
    def id(self) -> str:
        return "f-" + self.name

    @property
    def text(self) -> str:
        """The value as the text an input shows."""
        v = self.value
        if isinstance(v, Invalid):
            return v.raw
        if v is MISSING:
            return ""
        if self.node.kind == "json":
            return json.dumps(v, indent=2, ensure_ascii=False)
        if v is None:
            return ""
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)

    @property
    def collapsible(self) -> bool:
        """An optional free-form JSON field left empty: shown folded, after its siblings."""
        return (self.node.kind == "json" and not self.node.required and not self.errors
                and self.text in ("", "{}", "[]", "null"))

    @property
    def checked(self) -> bool:
        return self.value is True

    def option_value(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    @property
    def selected_option(self) -> str | None:
        v = self.value
        return None if v is MISSING or isinstance(v, Invalid) else self.option_value(v)

    def walk(self):
        """Yield this bound field and every sub-field (row templates excluded)."""
        yield self
        for child in self.children:
            yield from child.walk()


def bind(node: Node, value: Any = MISSING, *, prefix: str = "a") -> Bound:
    """Bind ``value`` (a typed action dict, or MISSING for defaults) to ``node`` under ``prefix``."""
    return _bind(node, value, prefix, 0)


def _bind(node: Node, value: Any, name: str, depth: int) -> Bound:
    if value is MISSING:
        value = node.default
    b = Bound(node=node, name=name, value=value, depth=depth)
    kind = node.kind
    if kind == "object":
        values = value if isinstance(value, dict) else {}
        b.children = [_bind(c, values.get(c.key, MISSING), f"{name}.{escape_key(c.key or '')}", depth)
                      for c in node.children]
    elif kind == "optional" and node.inner is not None:
        b.is_null = value is None or (value is MISSING and not node.required)
        b.children = [_bind(node.inner, MISSING if value is None else value, name, depth)]
    elif kind == "list" and node.item is not None:
        rows = list(value) if isinstance(value, list) else []
        rows += [MISSING] * max(0, node.min_items - len(rows))
        b.children = [_bind(node.item, v, f"{name}.{i}", depth + 1) for i, v in enumerate(rows)]
        b.template = _bind(node.item, MISSING, f"{name}.{placeholder(depth)}", depth + 1)
    elif kind == "union":
        b.selected = pick_variant(node, value)
        b.children = [_bind(v, value if i == b.selected else MISSING, f"{name}.~{i}", depth)
                      for i, v in enumerate(node.variants)]
    elif kind == "const":
        b.value = node.const
    return b


def pick_variant(node: Node, value: Any) -> int:
    """Index of the union variant that best fits ``value`` (discriminator first, then shape)."""
    if isinstance(value, dict) and node.discriminator and node.discriminator in value:
        for i, tag in enumerate(node.tags):
            if tag is not MISSING and tag == value[node.discriminator]:
                return i
    for i, v in enumerate(node.variants):
        if _fits(v, value):
            return i
    return 0


def _fits(node: Node, value: Any) -> bool:
    if value is MISSING or isinstance(value, Invalid):
        return False
    kind = node.kind
    if kind == "object":
        keys = {c.key for c in node.children}
        return isinstance(value, dict) and set(value) <= keys
    checks = {
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "list": lambda v: isinstance(v, list),
        "enum": lambda v: any(v == o for o, _ in node.options),
        "const": lambda v: v == node.const,
    }
    if kind in ("string", "text", "code"):
        return isinstance(value, str)
    return checks.get(kind, lambda v: True)(value)
