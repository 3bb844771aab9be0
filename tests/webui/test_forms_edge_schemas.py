"""Forms as a person meets them (issue 23): a tool without arguments has no field, a multiline
reset parameter is a textarea, an observation's metadata is shown once."""

from __future__ import annotations

import httpx

from openenv.core.env_server.http_server import parameter_schema, reset_parameters
from tests.webui.page import Tab
from tests.webui.servers import echo_app, serve
from webui.forms import bind, build_form, parse_form
from webui.templating import environment

FORM = environment().from_string('{% from "_form_widgets.html" import form %}{{ form(b) }}')


def test_a_tool_without_arguments_gets_no_field() -> None:
    for schema in ({"properties": {}}, {"type": "object", "properties": {}}):
        node = build_form(schema)
        assert node.kind == "object" and node.children == []
        assert parse_form(node, {}, prefix="t0") == ({}, [])
        html = FORM.render(b=bind(node, None, prefix="t0"))
        assert "<textarea" not in html and "required" not in html and "Value" not in html
    assert build_form({"type": "object"}).kind == "json"  # a free-form dict stays a JSON field
    assert build_form({"type": "object", "properties": {}, "additionalProperties": True}).kind == "json"


def test_multiline_beside_any_of_is_a_textarea() -> None:
    from openenv.envs.repl.environment import REPLEnvironment

    props = {p.name: parameter_schema(p) for p in reset_parameters(REPLEnvironment)}
    assert props["context"]["format"] == "multiline" and "anyOf" in props["context"]  # pydantic's shape
    node = build_form({"type": "object", "properties": props})
    kinds = {c.key: c.inner.kind for c in node.children}
    assert kinds == {"context": "text", "task_prompt": "text", "expected_answer": "string",
                     "max_iterations": "integer"}
    html = FORM.render(b=bind(node, None, prefix="r"))
    assert html.count("<textarea") == 2 and 'name="r.context"' in html.split("<textarea", 1)[1][:300]
    schema = {"anyOf": [{"type": "string", "format": "email"}, {"type": "null"}], "format": "multiline"}
    assert build_form(schema).inner.input_type == "email"  # the branch's own format wins


def test_metadata_is_shown_once_per_observation() -> None:
    with serve(echo_app()) as url, httpx.Client(base_url=url, timeout=30.0) as http:
        tab = Tab.open(http)
        tab.reset()
        html = tab.step(**{"a.message": "hi"}).text
        tab.post("close", {})
    observation = html.split('<section id="history"', 1)[0]
    assert observation.count('class="obs-meta"') == 1  # echo's step metadata {"step": 1}
    assert 'data-key="metadata"' not in observation


def test_toolbox_finish_has_no_value_field() -> None:
    import importlib.util

    from tests._require import require

    require(importlib.util.find_spec("fastmcp") is not None, "fastmcp (the mcp extra)")
    from tests.webui.servers import fresh_toolbox_app

    with serve(fresh_toolbox_app()) as url, httpx.Client(base_url=url, timeout=30.0) as http:
        tab = Tab.open(http)
        tab.reset()
        tools = tab.get("mcp/tools").text
        finish = next(part for part in tools.split('id="mcp-tool-')[1:] if "finish" in part.split("</form>")[0][:400])
        index, body = finish.split('"', 1)[0], finish.split("</form>", 1)[0]
        assert "<textarea" not in body and " required" not in body, body
        resp = tab.post(f"mcp/call/{index}", {})
        assert resp.status_code == 200, resp.text[:300]
        tab.post("close", {})
