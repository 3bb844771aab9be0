"""The studio: a verifiers: target is added to the catalogue, launched, played (a multi-line answer
box, the rubric's scores after the turn) and recorded."""

from __future__ import annotations

from pathlib import Path

from openenv.recording import EpisodeFilter, EpisodeStore
from tests.importers.helpers import SOURCES, need
from tests.studio.conftest import StudioClient, sc, studio_data, studio_url  # noqa: F401 - fixtures
from tests.studio.html import fragment, page
from tests.webui.formsim import submitted


def _form(html: str, form_id: str, **fields: str) -> dict[str, list[str]]:
    start = html.index(f'<form id="{form_id}"')
    data = submitted(html[start:html.index("</form>", start)])
    data.update({k: [v] for k, v in fields.items()})
    return data


def test_bad_live_target_is_a_field_error(sc: StudioClient) -> None:  # noqa: F811
    resp = sc.post("/envs/catalogue", {"target": "verifiers:my_env:n"})
    assert resp.status_code == 422 and "write key=value" in fragment(resp.text).by_id("catalogue-err").text()


def test_play_a_verifiers_env_in_the_studio(sc: StudioClient, studio_data: Path) -> None:  # noqa: F811
    need("verifiers")
    target = f"verifiers:{SOURCES / 'vf_single' / 'vf_single.py'}"
    assert sc.post("/envs/catalogue", {"target": target}).status_code == 200
    rid = sc.launch(target)
    assert sc.wait_launch(rid).find("div").attrs["data-status"] == "running"
    resp = sc.open_play(rid)
    assert resp.status_code == 200
    html, doc = resp.text, page(resp.text)
    sid = doc.by_id("env-page").attrs["data-session"]
    assert doc.by_id("step-form").find("textarea", name="a.message") is not None  # multi-line answer box
    data = _form(html, "reset-form", **{"r.seed": "7"})
    data.pop("r.seed.~null", None)
    reset = sc.post(f"/play/s/{sid}/reset", data)
    assert reset.status_code == 200 and "What is 1 + 1?" in reset.text  # seed 7 of 3 rows: row 1
    assert fragment(reset.text).find("div", class_="chat-msg chat-user") is not None  # the prompt as chat
    step = sc.post(f"/play/s/{sid}/step", _form(html, "step-form", **{"a.message": "2"}))
    assert step.status_code == 200, step.text[:2000]
    assert "exact" in step.text and "short" in step.text  # the rubric's per-function scores
    eid = fragment(reset.text).by_id("play-episode").find("a").attrs["href"].rsplit("/", 1)[1]
    with EpisodeStore(studio_data / "episodes.db") as store:
        steps = store.load_steps(eid)
        assert steps[-1].done and steps[-1].reward == 1.5
        assert steps[-1].metadata["metrics"]["exact"] == 1.0
        assert any(e.id == eid for e in store.list_episodes(EpisodeFilter()).items)
    sc.post(f"/play/s/{sid}/close", {})
    sc.post(f"/envs/r/{rid}/stop", **{"HX-Target": "running"})


def test_chat_schema_renders_a_conversation() -> None:
    from webui.obs_view import build_view

    schema = {"type": "object", "properties": {"messages": {"type": "array", "format": "chat", "items": {"type": "object"}}}}
    msgs = [{"role": "user", "content": "What is 17 + 25?"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "add", "arguments": '{"a": 17}'}]},
            {"role": "tool", "tool_call_id": "c1", "content": "42"}]  # fmt: skip
    view = build_view({"messages": msgs}, schema=schema)
    (key, chat), = view.children
    assert chat.kind == "chat"
    assert [label for label, _ in chat.children] == ["user", 'assistant → add({"a": 17})', "tool"]
    assert chat.children[2][1].text == "42" and chat.children[2][1].path == "/messages/2/content"
    plain = build_view({"messages": msgs})  # no schema: the usual tree
    assert plain.children[0][1].kind == "array"
