"""Validation errors land next to the field their ``loc`` names."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tests.webui.helpers import render_form
from tests.webui.zoo import ZooAction
from webui.forms import attach_errors, bind, build_form


def _errors(value: dict[str, Any]) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as info:
        ZooAction.model_validate(value)
    return [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in info.value.errors()]


def _placed(value: dict[str, Any], errors: list[dict[str, Any]] | None = None) -> tuple[dict[str, list[str]], list[str]]:
    bound = bind(build_form(ZooAction.model_json_schema()), value)
    loose = attach_errors(bound, errors if errors is not None else _errors(value))
    return {b.name: b.errors for b in bound.walk() if b.errors}, loose


def test_scalar_nested_list_and_tagged_union_errors() -> None:
    value = {
        "text": "forbidden",
        "count": 12,
        "outer": {"inner": {"depth": "deep"}},
        "items": [{"name": "ok"}, {"qty": 0}],
        "shape": {"kind": "rect", "w": 0},
        "shapes": [{"kind": "group", "members": [{"kind": "circle", "radius": -1}]}],
    }
    placed, loose = _placed(value)
    assert loose == []
    assert set(placed) == {
        "a.text", "a.count", "a.outer.inner.depth", "a.items.1.name", "a.items.1.qty",
        "a.shape.~1.w", "a.shapes.0.~2.members.0.~0.radius",
    }
    assert "forbidden" in placed["a.text"][0]


def test_plain_union_errors_go_to_the_selected_variant() -> None:
    placed, _ = _placed({"text": "t", "any_shape": {"kind": "rect", "w": 0}})
    assert set(placed) == {"a.any_shape.~1.w"}


def test_union_errors_for_unselected_variants_go_to_the_union() -> None:
    errors = [{"loc": ["number_or_text", "str"], "msg": "Input should be a valid string"}]
    placed, _ = _placed({"text": "t", "number_or_text": 5}, errors)
    assert placed == {"a.number_or_text": ["str: Input should be a valid string"]}
    both = [{"loc": ["number_or_text", "int"], "msg": "bad int"}, *errors]
    placed, _ = _placed({"text": "t", "number_or_text": 5}, both)
    assert placed == {"a.number_or_text.~0": ["bad int"]}


def test_unknown_and_root_errors_stay_loose() -> None:
    errors = [
        {"loc": ["nope"], "msg": "Extra inputs are not permitted"},
        {"loc": [], "msg": "whole action is wrong"},
        {"loc": ["action", "count"], "msg": "prefixed loc"},
    ]
    placed, loose = _placed({"text": "t"}, errors)
    assert loose == ["nope: Extra inputs are not permitted", "whole action is wrong"]
    assert placed == {"a.count": ["prefixed loc"]}


def test_errors_render_next_to_the_field() -> None:
    bound = bind(build_form(ZooAction.model_json_schema()), {"text": "t", "count": 12})
    attach_errors(bound, _errors({"text": "t", "count": 12}))
    html = render_form(bound)
    field = html[html.index('data-field="a.count"'):]
    field = field[: field.index('data-field="a.ratio"')]
    assert 'id="f-a.count-err"' in field and "less than or equal to 9" in field
    assert 'aria-invalid="true"' in field
