"""value -> rendered form -> what a browser submits -> parsed value, over the zoo of action models."""

from __future__ import annotations

import pytest

from tests.webui.formsim import submitted
from tests.webui.helpers import render_form, round_trip
from tests.webui.zoo import SAMPLES, ZooAction
from webui.forms import Invalid, bind, build_form, parse_form, placeholder, strip_invalid


def _canonical(value: dict) -> dict:
    return ZooAction.model_validate(value).model_dump(mode="json", by_alias=True)


@pytest.mark.parametrize("sample", SAMPLES, ids=range(len(SAMPLES)))
def test_round_trip_preserves_the_action(sample: dict) -> None:
    parsed, errors, _ = round_trip(ZooAction.model_json_schema(), sample)
    assert errors == []
    assert _canonical(parsed) == _canonical(sample)


def test_defaults_are_prefilled() -> None:
    parsed, errors, html = round_trip(ZooAction.model_json_schema(), {"text": "t"})
    assert errors == []
    assert parsed["count"] == 3 and parsed["ratio"] == 0.5 and parsed["color"] == "green"
    assert parsed["maybe_int"] is None and parsed["maybe_text"] == "x" and parsed["words"] == ["a"]
    assert 'name="a.source"' in html and "print(1)" in html


def test_values_are_typed() -> None:
    parsed, _, _ = round_trip(ZooAction.model_json_schema(), SAMPLES[1])
    assert isinstance(parsed["count"], int) and isinstance(parsed["ratio"], float)
    assert parsed["enabled"] is True and parsed["level"] == 2 and parsed["mixed"] == 1
    assert parsed["numbers"] == [1, -2, 3] and parsed["grid"] == [[1, 2], [3], []]
    assert parsed["number_or_text"] == "seven"


def test_text_is_escaped_in_html() -> None:
    html = render_form(bind(build_form(ZooAction.model_json_schema()), SAMPLES[1]))
    assert "<b>&amp;</b>" not in html and "&lt;b&gt;" in html


def test_property_names_are_escaped_in_field_names() -> None:
    html = render_form(bind(build_form(ZooAction.model_json_schema()), {"text": "t"}))
    assert 'name="a.weird%2Ekey%20name"' in html


def test_unreadable_input_becomes_inline_errors() -> None:
    node = build_form(ZooAction.model_json_schema())
    form = submitted(render_form(bind(node, {"text": "t"})))
    form["a.count"] = ["2.5"]
    form["a.extra"] = ["{not json"]
    value, errors = parse_form(node, form)
    assert {tuple(e["loc"]) for e in errors} == {("count",), ("extra",)}
    assert isinstance(value["count"], Invalid) and value["count"].raw == "2.5"
    assert strip_invalid(value)["extra"] == "{not json"
    html = render_form(bind(node, value))
    assert "{not json" in html and 'value="2.5"' in html


def test_added_rows_from_the_row_template_are_read() -> None:
    """What the page's JS does on "+ Add": copy the row template with a fresh index."""
    node = build_form(ZooAction.model_json_schema())
    html = render_form(bind(node, {"text": "t", "items": [{"name": "a"}]}))
    at = html.index(f'data-placeholder="{placeholder(0)}"', html.index('data-field="a.items"'))
    row = _template_content(html, at).replace(placeholder(0), "7")
    form = submitted(html)
    extra = submitted(row.replace('name="a.items.7.name" value=""', 'name="a.items.7.name" value="new"'))
    form.update(extra)
    value, errors = parse_form(node, form)
    assert errors == []
    assert [i["name"] for i in value["items"]] == ["a", "new"]


def _template_content(html: str, inside: int) -> str:
    """The content of the <template> element whose start tag contains offset ``inside``."""
    start = html.index(">", inside) + 1
    depth, pos = 1, start
    while depth:
        opening, closing = html.find("<template", pos), html.index("</template>", pos)
        if 0 <= opening < closing:
            depth, pos = depth + 1, opening + 1
        else:
            depth, pos = depth - 1, closing + 1
    return html[start:pos - 1]


def test_removed_rows_and_null_toggles() -> None:
    node = build_form(ZooAction.model_json_schema())
    form = submitted(render_form(bind(node, SAMPLES[1])))
    for key in [k for k in form if k.startswith("a.words.1")]:
        del form[key]
    form["a.maybe_int.~null"] = ["1"]
    value, _ = parse_form(node, form)
    assert value["words"] == ["a", "c"] and value["maybe_int"] is None


def test_switching_variant_submits_only_the_chosen_one() -> None:
    node = build_form(ZooAction.model_json_schema())
    html = render_form(bind(node, {"text": "t", "shape": {"kind": "rect", "w": 4}}))
    assert 'name="a.shape.~0.radius"' in html
    form = submitted(html)
    assert form["a.shape.~variant"] == ["1"] and "a.shape.~0.radius" not in form
    value, _ = parse_form(node, form)
    assert value["shape"] == {"kind": "rect", "w": 4, "h": 2, "label": None}


def test_dataclass_actions_round_trip() -> None:
    import dataclasses

    from pydantic import TypeAdapter

    @dataclasses.dataclass
    class Move:
        dx: int = 0
        dy: int = 0

    @dataclasses.dataclass
    class Plan:
        name: str
        moves: list[Move] = dataclasses.field(default_factory=list)
        note: str | None = None

    adapter = TypeAdapter(Plan)
    value = {"name": "p", "moves": [{"dx": 1, "dy": -1}, {"dx": 0, "dy": 2}], "note": None}
    parsed, errors, _ = round_trip(adapter.json_schema(), value)
    assert errors == [] and adapter.validate_python(parsed) == adapter.validate_python(value)
