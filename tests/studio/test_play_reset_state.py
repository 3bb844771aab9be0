"""Play builds the env's real reset form from its ``/schema`` (the same one its ``/web`` page
builds) and has the State panel ``/web`` has."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.studio.conftest import StudioClient
from tests.studio.html import fragment, page, parse
from tests.webui.formsim import submitted
from tests.webui.servers import serve, zoo_app


@pytest.fixture(scope="module")
def zoo_url() -> Iterator[str]:
    with serve(zoo_app()) as url:
        yield url


def attach(sc: StudioClient, url: str) -> str:
    resp = sc.post("/envs/attach", {"url": url})
    assert resp.status_code == 200, resp.text
    row = next(r for r in sc.fragment("/envs/running").find_all("tr")
               if r.attrs.get("data-status") == "attached" and url in r.text())
    return row.attrs["data-runtime"]


def test_schema_carries_the_reset_parameters(zoo_url: str) -> None:
    schema = httpx.get(zoo_url + "/schema", trust_env=False).json()
    assert {"action", "observation", "state"} <= set(schema)
    props = schema["reset"]["properties"]
    assert list(props) == ["seed", "episode_id", "difficulty", "board"]
    assert props["board"]["enum"] == ["small", "large"] and props["difficulty"]["default"] == 1


def _names(form) -> set[str]:  # noqa: ANN001 - a parsed Node
    return {n.attrs["name"] for n in form.iter() if n.tag in ("input", "select", "textarea") and "name" in n.attrs}


def test_play_has_the_same_reset_form_as_web_and_a_state_panel(sc: StudioClient, zoo_url: str) -> None:
    rid = attach(sc, zoo_url)
    web = parse(httpx.get(zoo_url + "/web", trust_env=False).text)
    resp = sc.open_play(rid)
    assert resp.status_code == 200
    doc = page(resp.text)
    sid = doc.by_id("env-page").attrs["data-session"]
    try:
        play_fields = _names(doc.by_id("reset-form")) - {"csrf_token"}
        assert play_fields == _names(web.by_id("reset-form"))
        assert {"r.difficulty", "r.board"} <= play_fields
        assert [o.attrs["value"] for o in doc.by_id("reset-form").find("select", name="r.board").find_all("option")
                if o.attrs.get("value")] == ['"small"', '"large"']
        assert "Reset starts one" in doc.by_id("state").text()
        start = resp.text.index('<form id="reset-form"')
        data = submitted(resp.text[start:resp.text.index("</form>", start)])
        data.update({"r.difficulty": ["3"], "r.board": ['"large"'], "r.seed": ["5"]})
        resp = sc.post(f"/play/s/{sid}/reset", data)
        assert resp.status_code == 200 and resp.headers["HX-Trigger"] == "openenv:changed"
        assert "difficulty=3 board=large" in resp.text
        state = fragment(sc.http.get(f"/play/s/{sid}/state", headers={"HX-Request": "true"}).text)
        text = state.by_id("state").text()
        assert "difficulty" in text and "3" in text
        resp = sc.post(f"/play/s/{sid}/reset", {**data, "r.difficulty": ["many"]})
        assert resp.status_code == 422 and resp.headers["HX-Retarget"] == "#reset-editor"
    finally:
        sc.post(f"/play/s/{sid}/close", {})
        sc.post(f"/envs/r/{rid}/stop")


def test_play_has_the_repl_servers_own_reset_form(sc: StudioClient) -> None:
    """The case the issue was filed for: the REPL's reset takes context, task prompt, expected
    answer and max iterations, and Play now offers them as its own /web page does."""
    from openenv.core.env_server import create_app
    from openenv.envs.repl.environment import REPLEnvironment
    from openenv.envs.repl.models import REPLAction, REPLObservation

    with serve(create_app(REPLEnvironment, REPLAction, REPLObservation, env_name="repl")) as url:
        rid = attach(sc, url)
        try:
            web = parse(httpx.get(url + "/web", trust_env=False).text)
            resp = sc.open_play(rid)
            doc = page(resp.text)
            sid = doc.by_id("env-page").attrs["data-session"]
            fields = _names(doc.by_id("reset-form")) - {"csrf_token"}
            assert fields == _names(web.by_id("reset-form"))
            assert {"r.context", "r.task_prompt", "r.expected_answer", "r.max_iterations"} <= fields
            sc.post(f"/play/s/{sid}/close", {})
        finally:
            sc.post(f"/envs/r/{rid}/stop")
