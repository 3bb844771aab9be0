"""Play an MCP environment (the bundled toolbox) in the studio: tool forms, recorded calls, errors."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from openenv.recording import EpisodeStore
from tests._require import require
from tests.studio.conftest import StudioClient, recorded_tool_names
from tests.studio.html import fragment, page
from tests.webui.formsim import submitted


@pytest.fixture(scope="module")
def toolbox_rid(studio_url: str) -> str:
    require(importlib.util.find_spec("fastmcp") is not None, "fastmcp (the mcp extra)")
    import httpx

    with httpx.Client(base_url=studio_url, timeout=60.0, trust_env=False) as http:
        client = StudioClient(http)
        rid = client.launch("toolbox")
        assert client.wait_launch(rid).find("div").attrs["data-status"] == "running"
        return rid


def _tool_form(html: str, name: str) -> tuple[str, dict[str, list[str]]]:
    start = html.index(f'data-tool="{name}"')
    start = html.index("<form", start)
    chunk = html[start : html.index("</form>", start)]
    action = chunk.split('hx-post="', 1)[1].split('"', 1)[0]
    return action, submitted(chunk)


def test_tools_are_played_and_recorded(sc: StudioClient, toolbox_rid: str, studio_data: Path) -> None:
    resp = sc.open_play(toolbox_rid)
    assert resp.status_code == 200
    sid = page(resp.text).by_id("env-page").attrs["data-session"]
    try:
        panel = sc.http.get(f"/play/s/{sid}/mcp/tools", headers={"HX-Request": "true"})
        assert panel.status_code == 200 and 'data-tool="add_note"' in panel.text
        reset = sc.post(f"/play/s/{sid}/reset", {})
        eid = fragment(reset.text).by_id("play-episode").find("a").attrs["href"].rsplit("/", 1)[1]

        url, data = _tool_form(panel.text, "add_note")
        prefix = next(k for k in data if k.endswith(".text")).rsplit(".", 1)[0]
        data.update({f"{prefix}.text": ["from the studio"], f"{prefix}.tag": ["s"]})
        data.pop(f"{prefix}.tag.~null", None)
        done = sc.post(url, data)
        assert done.status_code == 200, done.text
        assert 'id="mcp-result-' in done.text and ">1</pre>" in done.text
        assert done.headers["HX-Trigger"] == "openenv:changed"  # the State panel and the env's view reload

        data[f"{prefix}.text"] = ["  "]
        failed = sc.post(url, data)
        assert failed.status_code == 200
        assert "a note needs some text" in failed.text and "tool-error" in failed.text

        missing = {k: v for k, v in data.items() if not k.startswith(f"{prefix}.text")}
        refused = sc.post(url, missing)  # a required argument left out: not sent, not recorded
        assert refused.status_code == 422 and "Field required" in refused.text

        store = EpisodeStore(studio_data / "episodes.db")
        try:
            steps = store.load_steps(eid, start=1)
            assert [s.action["tool_name"] for s in steps] == ["add_note", "add_note"]
            assert steps[0].action["arguments"] == {"text": "from the studio", "tag": "s"}
            assert store.get_episode(eid).env_name == "toolbox"
        finally:
            store.close()
    finally:
        sc.post(f"/play/s/{sid}/close", {})


def test_a_plain_env_shows_no_tools(sc: StudioClient, echo_rid: str) -> None:
    resp = sc.open_play(echo_rid)
    sid = page(resp.text).by_id("env-page").attrs["data-session"]
    try:
        panel = sc.http.get(f"/play/s/{sid}/mcp/tools", headers={"HX-Request": "true"})
        assert panel.status_code == 200 and panel.text == ""
    finally:
        sc.post(f"/play/s/{sid}/close", {})


def test_the_envs_view_and_its_buttons(sc: StudioClient, toolbox_rid: str, studio_data: Path) -> None:
    resp = sc.open_play(toolbox_rid)
    sid = page(resp.text).by_id("env-page").attrs["data-session"]
    try:
        before = sc.http.get(f"/play/s/{sid}/view", headers={"HX-Request": "true"})
        assert before.status_code == 200 and before.text == ""  # nothing to draw before a reset
        reset = sc.post(f"/play/s/{sid}/reset", {})
        eid = fragment(reset.text).by_id("play-episode").find("a").attrs["href"].rsplit("/", 1)[1]
        panel = sc.http.get(f"/play/s/{sid}/mcp/tools", headers={"HX-Request": "true"})
        url, data = _tool_form(panel.text, "add_note")
        prefix = next(k for k in data if k.endswith(".text")).rsplit(".", 1)[0]
        data[f"{prefix}.text"] = ["<b>drawn</b>"]
        assert sc.post(url, data).status_code == 200

        view = sc.http.get(f"/play/s/{sid}/view", headers={"HX-Request": "true"})
        frame = fragment(view.text).find("iframe")
        assert frame.attrs["sandbox"] == "" and "&lt;b&gt;drawn&lt;/b&gt;" in frame.attrs["srcdoc"]
        buttons = fragment(view.text).find_all("button")
        assert [b.text() for b in buttons] == ["List tools", "Read notes", "Finish"]
        act = sc.post(buttons[1].attrs["hx-post"], {})
        assert act.status_code == 200 and "drawn" in act.text
        assert sc.post(f"/play/s/{sid}/view/act/9", {}).status_code == 409

        assert recorded_tool_names(studio_data, eid) == ["add_note", "notes"]
    finally:
        sc.post(f"/play/s/{sid}/close", {})
