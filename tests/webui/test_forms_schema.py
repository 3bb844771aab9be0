"""JSON schema -> form nodes: widgets chosen by type and keywords, never by field name."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, create_model

from tests.webui.zoo import ZooAction
from webui.forms import MISSING, build_form


@pytest.fixture(scope="module")
def nodes() -> dict[str, Any]:
    root = build_form(ZooAction.model_json_schema())
    assert root.kind == "object"
    return {c.key: c for c in root.children}


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("text", "string"), ("body", "text"), ("source", "code"), ("email", "string"), ("count", "integer"),
        ("ratio", "number"), ("enabled", "boolean"), ("color", "enum"), ("level", "enum"), ("mode", "enum"),
        ("mixed", "enum"), ("maybe_int", "optional"), ("maybe_shape", "optional"), ("outer", "object"),
        ("shape", "union"), ("any_shape", "optional"), ("number_or_text", "union"), ("words", "list"),
        ("items", "list"), ("shapes", "list"), ("grid", "list"), ("extra", "json"), ("anything", "json"),
        ("pair", "json"), ("tree", "object"), ("weird.key name", "string"), ("metadata", "json"),
    ],
)
def test_kind_per_field(nodes: dict[str, Any], key: str, kind: str) -> None:
    assert nodes[key].kind == kind


def test_constraints_defaults_and_help(nodes: dict[str, Any]) -> None:
    assert nodes["count"].attrs == {"min": 0, "max": 9, "step": 1}
    assert nodes["ratio"].attrs == {"min": 0, "max": 1, "step": 0.25}
    assert nodes["count"].default == 3 and not nodes["count"].required
    assert nodes["text"].required and nodes["text"].default is MISSING
    assert nodes["text"].description == "A single line of text"
    assert nodes["email"].input_type == "email"
    assert nodes["source"].language == "python"
    assert nodes["words"].min_items == 1 and nodes["words"].max_items == 4
    assert [v for v, _ in nodes["color"].options] == ["red", "green", "blue"]
    assert [v for v, _ in nodes["level"].options] == [1, 2]
    assert [v for v, _ in nodes["mixed"].options] == ["a", 1, True]


def test_discriminated_union_variants(nodes: dict[str, Any]) -> None:
    shape = nodes["shape"]
    assert shape.discriminator == "kind"
    assert shape.labels == ["circle", "rect", "group"]
    group = shape.variants[2]
    members = next(c for c in group.children if c.key == "members")
    assert members.kind == "list" and members.item.kind == "union"
    assert members.item.labels == ["circle", "rect"]
    assert nodes["any_shape"].inner.labels == ["Circle", "Rect"]
    assert nodes["number_or_text"].type_names == ["int", "str"]


def test_recursion_falls_back_to_json(nodes: dict[str, Any]) -> None:
    children = next(c for c in nodes["tree"].children if c.key == "children")
    assert children.kind == "list" and children.item.kind == "json"
    assert children.item.reason == "recursive schema"


def test_names_never_choose_widgets() -> None:
    """Fields named like widgets ('password', 'code', 'email', 'color') stay plain strings."""
    names = ["password", "code", "email", "color", "date", "text", "source", "body"]
    model = create_model("Named", **{n: (str, "") for n in names})
    kinds = {c.key: (c.kind, c.input_type) for c in build_form(model.model_json_schema()).children}
    assert kinds == {n: ("string", "text") for n in names}


def test_other_schema_shapes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "nullable": {"type": ["integer", "null"]},
            "allof": {"allOf": [{"$ref": "#/definitions/E"}], "default": "y"},
            "pattern": {"type": "string", "pattern": "^a+$", "maxLength": 5},
            "excl": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
            "multi": {"type": "string", "multiline": True},
            "when": {"type": "string", "format": "date-time"},
        },
        "definitions": {"E": {"enum": ["x", "y"]}},
    }
    kids = {c.key: c for c in build_form(schema).children}
    assert kids["nullable"].kind == "optional" and kids["nullable"].inner.kind == "integer"
    assert kids["allof"].kind == "enum" and kids["allof"].default == "y"
    assert kids["pattern"].attrs == {"pattern": "^a+$", "maxlength": 5}
    assert kids["excl"].attrs == {"min": 1, "max": 9, "step": 1}
    assert kids["multi"].kind == "text"
    assert kids["when"].input_type == "datetime-local"


def test_literal_optional_and_const() -> None:
    class M(BaseModel):
        choice: Literal["a", "b"] | None = None
        fixed: Literal["only"] = "only"
        bounded: list[int] = Field(default_factory=list, min_length=2)

    kids = {c.key: c for c in build_form(M.model_json_schema()).children}
    assert kids["choice"].kind == "optional" and kids["choice"].inner.kind == "enum"
    assert kids["fixed"].kind == "const" and kids["fixed"].const == "only"
    assert kids["bounded"].min_items == 2


def test_garbage_schema_does_not_crash() -> None:
    for schema in ({}, {"type": "object"}, {"$ref": "#/$defs/Missing"}, {"anyOf": []}, {"type": 5}):
        assert build_form(schema).kind in ("json", "object")
    only_null = build_form({"anyOf": [{"type": "null"}, {"const": None}]})
    assert only_null.kind == "const" and only_null.const is None


def test_untyped_parameters_take_their_defaults_type() -> None:
    schema = {"type": "object", "properties": {
        "n": {"default": 1}, "x": {"default": 0.5}, "on": {"default": True}, "s": {"default": "a"},
        "none": {"default": None}, "lst": {"default": [1]},
    }}
    kinds = {c.key: c.kind for c in build_form(schema).children}
    assert kinds == {"n": "integer", "x": "number", "on": "boolean", "s": "string", "none": "json", "lst": "json"}
