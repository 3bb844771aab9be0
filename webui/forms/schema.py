"""JSON schema -> a tree of form nodes, chosen by type and schema keywords only (never by field name)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING", "__bool__": lambda self: False})()

KINDS = (
    "string", "text", "code", "integer", "number", "boolean", "enum", "const",
    "optional", "object", "list", "union", "json",
)
_TEXTAREA_FORMATS = {"textarea", "multiline", "multi-line", "text"}
_CODE_FORMATS = {"code", "json", "python", "source"}
_HINT_KEYS = ("format", "widget", "x-widget", "contentMediaType", "language", "x-language", "multiline")
_INPUT_TYPES = {
    "email": "email", "uri": "url", "url": "url", "date": "date", "time": "time",
    "date-time": "datetime-local", "password": "password", "color": "color",
}
_PY_TYPE_NAMES = {"integer": "int", "number": "float", "string": "str", "boolean": "bool",
                  "array": "list", "object": "dict", "null": "none"}
MAX_DEPTH = 12


@dataclass(eq=False)
class Node:
    """One form field: its widget ``kind``, label, help, constraints and sub-nodes."""

    kind: str
    key: str | None = None
    title: str = ""
    description: str | None = None
    required: bool = False
    default: Any = MISSING
    input_type: str = "text"
    language: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    options: list[tuple[Any, str]] = field(default_factory=list)
    const: Any = MISSING
    children: list[Node] = field(default_factory=list)
    item: Node | None = None
    min_items: int = 0
    max_items: int | None = None
    inner: Node | None = None
    variants: list[Node] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    tags: list[Any] = field(default_factory=list)
    discriminator: str | None = None
    type_names: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def has_default(self) -> bool:
        return self.default is not MISSING


class _Ctx:
    def __init__(self, root: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = {**root.get("definitions", {}), **root.get("$defs", {})}

    def resolve(self, schema: Any, stack: tuple[str, ...]) -> tuple[dict[str, Any], tuple[str, ...], bool]:
        """Follow ``$ref`` and single-element ``allOf``; siblings override the target. Flags cycles."""
        if not isinstance(schema, dict):
            return {}, stack, False
        for _ in range(MAX_DEPTH):
            ref = schema.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name in stack:
                    return schema, stack, True
                target = self.defs.get(name)
                if not isinstance(target, dict):
                    return {k: v for k, v in schema.items() if k != "$ref"}, stack, False
                siblings = {k: v for k, v in schema.items() if k != "$ref"}
                schema, stack = {**target, **siblings}, (*stack, name)
                continue
            all_of = schema.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1:
                siblings = {k: v for k, v in schema.items() if k != "allOf"}
                schema = {**all_of[0], **siblings} if isinstance(all_of[0], dict) else siblings
                continue
            return schema, stack, False
        return schema, stack, True


def build_form(schema: dict[str, Any]) -> Node:
    """Turn a JSON schema (pydantic's ``model_json_schema()`` shape) into a form node tree."""
    ctx = _Ctx(schema if isinstance(schema, dict) else {})
    return _node(ctx, schema if isinstance(schema, dict) else {}, None, True, (), 0)


def _node(ctx: _Ctx, raw: Any, key: str | None, required: bool, stack: tuple[str, ...], depth: int) -> Node:
    if isinstance(raw, dict):
        for name, sub in {**raw.get("definitions", {}), **raw.get("$defs", {})}.items():
            ctx.defs.setdefault(name, sub)
    schema, stack, cyclic = ctx.resolve(raw, stack)
    base = Node(
        kind="json", key=key, required=required,
        title=str(schema.get("title") or (key or "").replace("_", " ").strip().capitalize() or "Value"),
        description=schema.get("description") if isinstance(schema.get("description"), str) else None,
        default=schema.get("default", MISSING),
    )
    if cyclic or depth > MAX_DEPTH:
        base.reason = "recursive schema"
        return base
    if "const" in schema:
        base.kind, base.const = "const", schema["const"]
        return base
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _enum(base, schema["enum"])
    branches = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(branches, list) and branches:
        return _union(ctx, base, schema, branches, stack, depth)
    types = schema.get("type")
    if isinstance(types, list):
        rest = [t for t in types if t != "null"]
        if len(rest) == 1 and "null" in types:
            inner = _node(ctx, {**schema, "type": rest[0], "default": MISSING}, key, True, stack, depth + 1)
            return _optional(base, inner)
        base.reason = "several types"
        return base
    if types is None and "properties" not in schema and "items" not in schema:
        types = _type_of_default(schema.get("default", MISSING))
    return _typed(ctx, base, schema, types, stack, depth)


def _type_of_default(value: Any) -> str | None:
    """An untyped parameter with a scalar default takes the default's type."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _typed(ctx: _Ctx, base: Node, schema: dict[str, Any], t: Any, stack: tuple[str, ...], depth: int) -> Node:
    if t == "string":
        return _string(base, schema)
    if t in ("integer", "number"):
        base.kind = t
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is None and isinstance(schema.get("exclusiveMinimum"), (int, float)):
            lo = schema["exclusiveMinimum"] + (1 if t == "integer" else 0)
        if hi is None and isinstance(schema.get("exclusiveMaximum"), (int, float)):
            hi = schema["exclusiveMaximum"] - (1 if t == "integer" else 0)
        step = schema.get("multipleOf") or (1 if t == "integer" else "any")
        base.attrs = {k: v for k, v in (("min", lo), ("max", hi), ("step", step)) if v is not None}
        return base
    if t == "boolean":
        base.kind = "boolean"
        return base
    if t == "null":
        base.kind, base.const = "const", None
        return base
    if t == "array" or "items" in schema:
        items = schema.get("items")
        if "prefixItems" in schema or not isinstance(items, dict):
            base.reason = "tuple or untyped list"
            return base
        base.kind = "list"
        base.item = _node(ctx, items, None, True, stack, depth + 1)
        base.min_items = int(schema.get("minItems") or 0)
        base.max_items = schema.get("maxItems") if isinstance(schema.get("maxItems"), int) else None
        return base
    if t == "object" or "properties" in schema:
        props = schema.get("properties")
        free = schema.get("additionalProperties") not in (None, False)
        if not isinstance(props, dict) or (not props and "properties" not in schema) or free:
            base.reason = "free-form object"
            return base
        required = set(schema.get("required") or ())
        base.kind = "object"
        base.children = [_node(ctx, sub, name, name in required, stack, depth + 1) for name, sub in props.items()]
        return base
    base.reason = "any value"
    return base


def _string(base: Node, schema: dict[str, Any]) -> Node:
    fmt = str(schema.get("format") or "").lower()
    widget = str(schema.get("widget") or schema.get("x-widget") or "").lower()
    media = str(schema.get("contentMediaType") or "").lower()
    lang = schema.get("language") or schema.get("x-language")
    if fmt in _CODE_FORMATS or widget == "code" or lang or media.startswith(("text/x-", "application/")):
        from_media = media.removeprefix("text/x-") if media.startswith("text/x-") else ""
        base.kind = "code"
        base.language = str(lang or (fmt if fmt not in ("code", "source") else "") or from_media or "") or None
    elif fmt in _TEXTAREA_FORMATS or widget in _TEXTAREA_FORMATS or schema.get("multiline") is True:
        base.kind = "text"
    else:
        base.kind = "string"
        base.input_type = _INPUT_TYPES.get(fmt, "text")
    attrs = {"minlength": schema.get("minLength"), "maxlength": schema.get("maxLength")}
    if base.kind == "string" and isinstance(schema.get("pattern"), str):
        attrs["pattern"] = schema["pattern"]
    base.attrs = {k: v for k, v in attrs.items() if v is not None}
    return base


def _enum(base: Node, values: list[Any]) -> Node:
    base.kind = "enum"
    base.options = [(v, "(none)" if v is None else str(v)) for v in values]
    return base


def _optional(base: Node, inner: Node) -> Node:
    inner.title, inner.description = base.title, None
    base.kind, base.inner = "optional", inner
    return base


def _union(ctx: _Ctx, base: Node, schema: dict[str, Any], branches: list[Any], stack: tuple[str, ...],
           depth: int) -> Node:
    resolved = [ctx.resolve(b, stack)[0] for b in branches]
    nullable = any(r.get("type") == "null" or ("const" in r and r["const"] is None) for r in resolved)
    kept = [b for b, r in zip(branches, resolved, strict=True)
            if not (r.get("type") == "null" or ("const" in r and r["const"] is None))]
    if kept and all("const" in r or isinstance(r.get("enum"), list) for r in resolved):
        values = [v for r in resolved for v in ([r["const"]] if "const" in r else r["enum"])]
        return _enum(base, list(dict.fromkeys(values)) if all(_hashable(v) for v in values) else values)
    if not kept:
        base.kind, base.const = "const", None
        return base
    if len(kept) == 1:
        inner = _node(ctx, _with_hints(schema, kept[0]), base.key, True, stack, depth + 1)
    else:
        inner = _variants(ctx, Node(kind="union", key=base.key, title=base.title, required=True),
                          schema, kept, stack, depth)
    if nullable:
        return _optional(base, inner)
    inner.title, inner.description = base.title, base.description
    inner.required, inner.default = base.required, base.default
    return inner


def _with_hints(outer: dict[str, Any], branch: Any) -> Any:
    """``branch`` with the widget hints (``format``...) set beside ``anyOf`` (pydantic puts a
    ``str | None`` field's ``json_schema_extra`` there), unless the branch sets its own."""
    hints = {k: outer[k] for k in _HINT_KEYS if k in outer}
    if not hints or not isinstance(branch, dict) or "$ref" in branch:
        return branch
    return {**hints, **branch}


def _variants(ctx: _Ctx, node: Node, schema: dict[str, Any], kept: list[Any], stack: tuple[str, ...],
              depth: int) -> Node:
    disc = schema.get("discriminator")
    prop = disc.get("propertyName") if isinstance(disc, dict) else disc if isinstance(disc, str) else None
    mapping = disc.get("mapping", {}) if isinstance(disc, dict) else {}
    for branch in kept:
        sub = _node(ctx, branch, node.key, True, stack, depth + 1)
        resolved = ctx.resolve(branch, stack)[0]
        tag: Any = MISSING
        if prop and sub.kind == "object":
            tag_node = next((c for c in sub.children if c.key == prop), None)
            if tag_node is not None and tag_node.kind == "const":
                tag = tag_node.const
            elif tag_node is not None and tag_node.kind == "enum" and tag_node.options:
                tag = tag_node.options[0][0]
            ref = branch.get("$ref") if isinstance(branch, dict) else None
            tag = next((k for k, v in mapping.items() if v == ref), tag) if tag is MISSING else tag
        type_name = _PY_TYPE_NAMES.get(str(resolved.get("type")), "")
        label = str(tag) if tag is not MISSING else str(resolved.get("title") or type_name or f"option {len(node.variants) + 1}")
        node.variants.append(sub)
        node.labels.append(label)
        node.tags.append(tag)
        node.type_names.append(str(resolved.get("title") or type_name))
    node.discriminator = prop
    return node


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
