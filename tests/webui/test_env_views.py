"""The page's editors: form and raw-JSON reading, switching modes, free-form (generic) actions."""

from __future__ import annotations

import json

from tests.webui.formsim import submitted
from tests.webui.helpers import render_form
from tests.webui.zoo import ZooAction
from webui.env_views import Editor, PageViews, read_action
from webui.forms import bind, build_form


def _views() -> PageViews:
    return PageViews(action_node=build_form(ZooAction.model_json_schema()),
                     reset_node=build_form({"type": "object", "properties": {}}))


def test_generic_dict_action_is_one_json_editor() -> None:
    node = build_form({"type": "object"})
    assert node.kind == "json"
    html = render_form(bind(node))
    form = submitted(html)
    assert list(form) == ["a"]
    form["a"] = ['{"anything": [1, 2]}']
    editor, action = read_action(node, form)
    assert action == {"anything": [1, 2]} and editor.loose == []
    form["a"] = ["[1, 2]"]
    editor, action = read_action(node, form)
    assert action is None and editor.loose == ["The value must be an object"]


def test_raw_mode_reads_json_objects_only() -> None:
    node = _views().action_node
    assert read_action(node, {"mode": ["raw"], "raw_json": ['{"text": "x"}']})[1] == {"text": "x"}
    for text, problem in (("{", "Invalid JSON"), ("[1]", "must be a JSON object")):
        editor, action = read_action(node, {"mode": ["raw"], "raw_json": [text]})
        assert action is None and problem in editor.loose[0] and editor.raw == text


def test_switching_modes_keeps_typed_values() -> None:
    views = _views()
    form = submitted(render_form(bind(views.action_node, {"text": "t", "count": 5, "words": ["x", "y"]})))
    raw = views.switch_editor({**form, "mode": ["form"]}, "raw")
    value = json.loads(raw.raw)
    assert raw.mode == "raw" and value["count"] == 5 and value["words"] == ["x", "y"]
    back = views.switch_editor({"mode": ["raw"], "raw_json": [raw.raw]}, "form")
    assert back.mode == "form" and back.bound is not None
    again = submitted(render_form(back.bound))
    assert again["a.count"] == ["5"] and again["a.words.1"] == ["y"]


def test_server_errors_in_raw_mode_are_listed_with_their_path() -> None:
    editor = _views().editor_errors(Editor("raw", raw="{}"), {}, [{"loc": ["items", 0, "name"], "msg": "Field required"}])
    assert editor.loose == ["items.0.name: Field required"]


def test_optional_json_fields_fold_after_their_siblings() -> None:
    html = render_form(bind(_views().action_node, {"text": "t"}))
    assert html.index('data-field="a.metadata"') > html.index('data-field="a.weird%2Ekey%20name"')
    assert '<details class="field json collapsed" data-field="a.metadata">' in html
