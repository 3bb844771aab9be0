"""Play against a real echo env launched by the studio: every step is stored before it is shown."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from openenv.recording import EpisodeFilter, EpisodeStore
from tests.studio.conftest import StudioClient
from tests.studio.html import Node, fragment, page
from tests.webui.formsim import submitted


@dataclass
class PlayTab:
    """One Play tab: its session id and the forms of the page it loaded."""

    sc: StudioClient
    html: str
    doc: Node
    sid: str

    def form(self, form_id: str, **fields: str) -> dict[str, list[str]]:
        """What submitting ``form_id`` would post, with ``fields`` filled in."""
        start = self.html.index(f'<form id="{form_id}"')
        data = submitted(self.html[start:self.html.index("</form>", start)])
        data.update({k: [v] for k, v in fields.items()})
        return data

    def post(self, what: str, data: dict[str, list[str]], **headers: str):
        return self.sc.post(f"/play/s/{self.sid}/{what}", data, **headers)


@pytest.fixture()
def tab(sc: StudioClient, echo_rid: str) -> Iterator[PlayTab]:
    resp = sc.open_play(echo_rid)
    assert resp.status_code == 200
    doc = page(resp.text)
    t = PlayTab(sc, resp.text, doc, doc.by_id("env-page").attrs["data-session"])
    yield t
    t.post("close", {})


def _store(studio_data: Path) -> EpisodeStore:
    return EpisodeStore(studio_data / "episodes.db")


def test_play_page_has_generated_form(tab: PlayTab) -> None:
    form = tab.doc.by_id("step-form")
    assert form.find("input", name="a.message") is not None
    assert form.find("input", name="csrf_token") is not None
    assert tab.doc.by_id("reset-form").find("input", name="r.seed") is not None
    assert "Press" in tab.doc.by_id("play-episode").text()
    close = tab.doc.by_id("env-page").attrs["data-close-url"]
    assert "csrf_token=" in close


def test_reset_and_three_steps_are_recorded_before_shown(tab: PlayTab, studio_data: Path) -> None:
    data = tab.form("reset-form", **{"r.seed": "7"})
    data.pop("r.seed.~null", None)  # typing in the box unticks "none" in the browser
    resp = tab.post("reset", data)
    assert resp.status_code == 200
    frag = fragment(resp.text)
    link = frag.by_id("play-episode").find("a")
    eid = link.attrs["href"].rsplit("/", 1)[1]
    store = _store(studio_data)
    try:
        for n, message in enumerate(["one", "two!", "three"], 1):
            resp = tab.post("step", tab.form("step-form", **{"a.message": message}))
            assert resp.status_code == 200
            obs = fragment(resp.text).by_id("observation")
            assert message in obs.text() and f"step {n}" in obs.text()
            ep = store.get_episode(eid)  # read right after the reply: already committed
            assert ep.step_count == n
            assert store.load_steps(eid, start=n)[0].action == {"message": message}
        ep = store.get_episode(eid)
        assert (ep.source, ep.label, ep.seed, ep.env_name) == ("human", "studio", 7, "echo")
        assert ep.total_reward == pytest.approx(0.3 + 0.4 + 0.5)
        assert ep.run.provider == "process"
        assert eid in [e.id for e in store.list_episodes(EpisodeFilter(source="human")).items]
    finally:
        store.close()
    history = fragment(resp.text).by_id("history")
    assert len(history.find_all("tr", class_="history-row") + history.find_all("tr", class_="history-row current")) == 4


def test_invalid_action_shows_errors_inline(tab: PlayTab) -> None:
    tab.post("reset", tab.form("reset-form"))
    resp = tab.post("step", {"mode": ["raw"], "raw_json": ['{"message": 5}']})
    assert resp.status_code == 422
    assert resp.headers["HX-Retarget"] == "#action-editor"
    editor = fragment(resp.text).by_id("action-editor")
    assert "message" in editor.text()
    resp = tab.post("step", {"mode": ["raw"], "raw_json": ["not json"]})
    assert resp.status_code == 422 and "Invalid JSON" in resp.text


def test_step_before_reset_is_a_readable_notice(tab: PlayTab) -> None:
    resp = tab.post("step", tab.form("step-form", **{"a.message": "early"}))
    assert resp.status_code == 409
    notice = fragment(resp.text).find("div", role="alert")
    assert notice is not None and notice.attrs["data-code"] == "STEP_BEFORE_RESET"


def test_editor_switch_history_value_and_full_page_fallback(tab: PlayTab) -> None:
    tab.post("reset", tab.form("reset-form"))
    tab.post("step", tab.form("step-form", **{"a.message": "x" * 3000}))
    resp = tab.post("editor?to=raw", tab.form("step-form", **{"a.message": "hey"}))
    assert fragment(resp.text).by_id("raw-json").text().strip().startswith("{")
    obs = tab.sc.fragment(f"/play/s/{tab.sid}/history/0").by_id("observation")
    assert "reset" in obs.text()
    assert tab.sc.fragment(f"/play/s/{tab.sid}/history/99", status=404) is not None
    value = tab.sc.fragment(f"/play/s/{tab.sid}/value/1", params={"path": "/observation/echoed_message"})
    assert len(value.text().strip()) == 3000
    assert tab.sc.fragment(f"/play/s/{tab.sid}/value/1", status=404, params={"path": "/nope"}) is not None
    resp = tab.sc.post(f"/play/s/{tab.sid}/step", tab.form("step-form", **{"a.message": "plain"}), htmx=False)
    assert "plain" in page(resp.text).by_id("observation").text()


def test_closed_session_and_stopped_runtime(sc: StudioClient, tab: PlayTab) -> None:
    assert tab.post("close", {}).status_code == 204
    resp = tab.post("step", tab.form("step-form", **{"a.message": "late"}))
    assert resp.status_code == 409 and "closed" in resp.text  # a closed session says so (webui/studio/play_state.py)
    assert fragment(resp.text).find("div", role="alert").attrs["data-code"] == "SESSION_CLOSED"
    assert tab.sc.fragment("/play/s/nope/status", status=404) is not None
    sc.page("/play/nope", status=404)
