"""Play's state machine over HTTP (webui/studio/play_state.py): a closed session refuses steps,
``done`` ends input until Reset, a call before Reset records nothing, the model's turn refuses
the person's, and a page that comes back re-attaches or offers to continue the episode."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openenv.recording import EpisodeFilter, EpisodeStore
from tests._require import require
from tests.server_utils import running_server
from tests.studio.conftest import StudioClient
from tests.studio.html import fragment, page
from tests.studio.test_mcp_play import _tool_form
from tests.webui.formsim import submitted
from tests.webui.servers import echo_app, fresh_toolbox_app, serve


def _attach(sc: StudioClient, env_url: str) -> str:
    assert sc.post("/envs/attach", {"url": env_url}).status_code == 200
    rows = sc.fragment("/envs/running").find_all("tr")
    return next(r for r in rows if r.attrs.get("data-status") == "attached" and env_url in r.text()).attrs["data-runtime"]


class Tab:
    """One Play page: its session and forms."""

    def __init__(self, sc: StudioClient, rid: str, query: str = "") -> None:
        resp = sc.open_play(rid, query)
        assert resp.status_code == 200, resp.text[:500]
        self.sc, self.html, self.doc = sc, resp.text, page(resp.text)
        self.sid = self.doc.by_id("env-page").attrs["data-session"]

    def post(self, what: str, data: dict | None = None) -> httpx.Response:
        return self.sc.post(f"/play/s/{self.sid}/{what}", data or {})

    def step(self, message: str) -> httpx.Response:
        start = self.html.index('<form id="step-form"')
        data = submitted(self.html[start:self.html.index("</form>", start)])
        data["a.message"] = [message]
        return self.post("step", data)

    def status(self) -> dict[str, str]:
        return self.sc.fragment(f"/play/s/{self.sid}/status").by_id("play-status").attrs


def _code(resp: httpx.Response) -> str:
    return fragment(resp.text).find("div", role="alert").attrs["data-code"]


def _steps(data: Path, eid: str) -> int:
    with EpisodeStore(data / "episodes.db") as store:
        return store.get_episode(eid).step_count


@pytest.fixture()
def echo_env(sc: StudioClient) -> Iterator[tuple[str, str]]:
    """An echo server of this test's own, attached to the studio: (its URL, the runtime id)."""
    with serve(echo_app()) as env_url:
        rid = _attach(sc, env_url)
        try:
            yield env_url, rid
        finally:
            sc.post(f"/envs/r/{rid}/stop")


@pytest.mark.parametrize("how", ["delete", "dashboard"])
def test_a_closed_session_refuses_steps_and_offers_to_continue(how: str, sc: StudioClient, echo_env: tuple[str, str],
                                                               studio_data: Path) -> None:
    env_url, rid = echo_env
    tab = Tab(sc, rid)
    assert tab.status()["data-phase"] == "idle" and tab.status()["data-step"] == "false"  # no episode yet
    reset = tab.post("reset")
    assert 'id="play-status"' in reset.text and 'data-phase="idle"' in reset.text and 'data-step="true"' in reset.text
    assert tab.step("one").status_code == 200
    eid = tab.status()["data-episode"]
    (server_sid,) = [s["session_id"] for s in httpx.get(env_url + "/sessions", trust_env=False).json()["sessions"]]
    if how == "delete":
        assert httpx.delete(f"{env_url}/sessions/{server_sid}", trust_env=False).status_code == 200
    else:
        assert sc.post(f"/envs/r/{rid}/sessions/{server_sid}/close").status_code == 200
    time.sleep(0.2)

    refused = tab.step("after close")
    assert refused.status_code == 409 and _code(refused) == "SESSION_CLOSED", refused.text[:300]
    assert 'data-phase="closed"' in refused.text and "closed" in fragment(refused.text).by_id("observation").text()
    again = tab.step("and again")
    assert again.status_code == 409 and _code(again) == "SESSION_CLOSED"
    assert _code(tab.post("reset")) == "SESSION_CLOSED"
    status = tab.status()
    assert status["data-phase"] == "closed" and status["data-step"] == status["data-reset"] == "false"
    assert _steps(studio_data, eid) == 1  # nothing recorded after the close

    back = Tab(sc, rid, f"?session={tab.sid}")  # reload or Back: the session is gone, its episode is offered
    assert back.sid != tab.sid
    resume = back.doc.by_id("play-resume")
    assert resume.attrs["data-episode"] == eid and resume.attrs["data-step"] == "1"
    form = back.doc.by_id("resume-form")
    assert form.find("input", name="step").attrs["value"] == "1" and form.find("input", name="runtime").attrs["value"] == rid
    resp = sc.post(f"/episodes/{eid}/fork", {"step": "1", "runtime": rid})
    assert resp.status_code == 200 and "?session=" in resp.headers["HX-Redirect"]  # a fork from the last step
    forked = Tab(sc, rid, "?" + resp.headers["HX-Redirect"].split("?", 1)[1])
    assert forked.status()["data-phase"] == "idle" and "forked from" in forked.doc.by_id("play-episode").text()
    assert forked.step("on the fork").status_code == 200
    forked.post("close")
    back.post("close")


def test_reload_re_attaches_within_the_grace_and_closes_after(sc: StudioClient, echo_env: tuple[str, str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from webui.studio.routes import play as play_routes

    monkeypatch.setattr(play_routes, "DETACH_GRACE_S", 0.5)
    _, rid = echo_env
    tab = Tab(sc, rid)
    tab.post("reset")
    tab.step("kept")
    assert tab.post("close?grace=1").status_code == 204  # the page went away (pagehide)
    again = Tab(sc, rid, f"?session={tab.sid}")  # the reload asks for it at once
    assert again.sid == tab.sid and "kept" in again.doc.by_id("observation").text()
    assert again.doc.find(id="play-resume") is None
    second = Tab(sc, rid, f"?session={tab.sid}")  # a second tab on the same session
    assert second.sid == tab.sid
    assert second.step("from tab two").status_code == 200
    assert tab.status()["data-episode"] == second.status()["data-episode"]
    time.sleep(0.8)
    assert tab.status()["data-phase"] == "idle"  # used meanwhile: not closed

    tab.post("close?grace=1")
    time.sleep(0.8)  # nobody came back
    assert tab.status()["data-phase"] == "closed"
    assert _code(second.step("late")) == "SESSION_CLOSED"


@pytest.fixture()
def toolbox(sc: StudioClient) -> Iterator[str]:
    require(importlib.util.find_spec("fastmcp") is not None, "fastmcp (the mcp extra)")
    with serve(fresh_toolbox_app()) as env_url:
        rid = _attach(sc, env_url)
        try:
            yield rid
        finally:
            sc.post(f"/envs/r/{rid}/stop")


def test_done_ends_input_until_reset_and_no_call_before_reset(sc: StudioClient, toolbox: str, studio_data: Path) -> None:
    tab = Tab(sc, toolbox)
    panel = sc.http.get(f"/play/s/{tab.sid}/mcp/tools", headers={"HX-Request": "true"}).text
    note_url, note = _tool_form(panel, "add_note")
    prefix = next(k for k in note if k.endswith(".text")).rsplit(".", 1)[0]
    note.update({f"{prefix}.text": ["a note"]})
    finish_url, finish = _tool_form(panel, "finish")
    with EpisodeStore(studio_data / "episodes.db") as store:
        before = store.count_episodes(EpisodeFilter(env="toolbox"))

    early = sc.post(note_url, note)  # a tool call before Reset
    assert early.status_code == 409 and _code(early) == "STEP_BEFORE_RESET" and "Press Reset" in early.text
    assert 'id="mcp-result-' not in early.text
    assert tab.status()["data-episode"] == ""
    with EpisodeStore(studio_data / "episodes.db") as store:
        assert store.count_episodes(EpisodeFilter(env="toolbox")) == before  # nothing was recorded

    tab.post("reset")
    eid = tab.status()["data-episode"]
    assert sc.post(note_url, note).status_code == 200
    done = sc.post(finish_url, finish)
    assert done.status_code == 200 and 'data-phase="done"' in done.text
    status = tab.status()
    assert status["data-phase"] == "done" and status["data-step"] == "false" and status["data-reset"] == "true"
    late = sc.post(note_url, note)
    assert late.status_code == 409 and _code(late) == "EPISODE_DONE"
    assert _code(sc.post(finish_url, finish)) == "EPISODE_DONE"
    assert _steps(studio_data, eid) == 2  # the refused calls were not recorded

    assert tab.post("reset").status_code == 200
    assert tab.status()["data-phase"] == "idle"
    assert sc.post(note_url, note).status_code == 200
    tab.post("close")


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    from tests.rollout.fake_openai import make_app

    with running_server(make_app()) as url:
        yield url + "/v1"


def test_model_playing_refuses_the_person_and_updates_one_observation(sc: StudioClient, echo_env: tuple[str, str],
                                                                      model_url: str, studio_data: Path) -> None:
    _, rid = echo_env
    resp = sc.post("/models/endpoints", {"name": "phase-slow", "base_url": model_url, "model": "slow-0.3"}, htmx=False)
    assert resp.status_code in (200, 303)
    tab = Tab(sc, rid)
    refused = tab.post("model", {"endpoint": "phase-slow", "steps": "3"})
    assert refused.status_code == 422 and "Press Reset" in refused.text
    tab.post("reset")
    started = tab.post("model", {"endpoint": "phase-slow", "steps": "3"})
    assert started.status_code == 200 and 'data-phase="model playing"' in started.text
    assert 'data-step="false"' in started.text and 'data-take-back="true"' in started.text
    assert tab.status()["data-phase"] == "model playing"
    step = tab.step("mine")
    assert step.status_code == 409 and _code(step) == "MODEL_PLAYING"
    assert _code(tab.post("reset")) == "MODEL_PLAYING"
    seen, swaps = "0", 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        poll = sc.http.get(f"/play/s/{tab.sid}/model", params={"seen": seen}, headers={"HX-Request": "true"})
        node = fragment(poll.text)
        taken = node.by_id("takeover").attrs["data-taken"]
        observations = [n for n in node.find_all("section") if n.attrs.get("id") == "observation"]
        if taken != seen:
            assert len(observations) == 1 and observations[0].attrs.get("hx-swap-oob") == "true"
            assert poll.headers.get("HX-Trigger") == "openenv:changed"  # the State panel reloads
            swaps += 1
        else:
            assert observations == [] and "HX-Trigger" not in poll.headers
        seen = taken
        if node.by_id("takeover").attrs["data-status"] != "running":
            break
        time.sleep(0.1)
    assert node.by_id("takeover").attrs["data-status"] == "finished" and seen == "3" and swaps >= 1
    assert tab.status()["data-phase"] == "idle"
    assert tab.step("mine now").status_code == 200
    assert _steps(studio_data, tab.status()["data-episode"]) == 4  # 3 model steps + 1 of mine, none refused
    tab.post("close")


def test_an_idle_session_is_closed_not_forgotten(tmp_path: Path) -> None:
    import asyncio

    from webui.studio.play import PlaySessions
    from webui.studio.play_state import PlayRefusedError

    async def run(env_url: str) -> None:
        with EpisodeStore(tmp_path / "episodes.db") as store:
            plays = PlaySessions(store, idle_s=0.2)
            ps = await plays.open("rt", "echo", env_url, provider="url")
            await plays.reset(ps, {})
            await asyncio.sleep(0.3)
            await plays.reap()
            assert plays.peek(ps.id).phase == "closed" and "idle" in ps.closed  # its page can say so
            with pytest.raises(PlayRefusedError) as refused:
                await plays.step(ps, {"message": "late"})
            assert refused.value.code == "SESSION_CLOSED"
            assert store.get_episode(ps.last_episode_id).step_count == 0
            await plays.close_all()

    with serve(echo_app()) as env_url:
        asyncio.run(run(env_url))


def test_end_ends_the_episode_and_keeps_the_session(sc: StudioClient, echo_env: tuple[str, str],
                                                    studio_data: Path) -> None:  # fmt: skip
    tab = Tab(sc, echo_env[1])
    assert "end-episode" not in sc.http.get(f"/play/s/{tab.sid}/status", headers={"HX-Request": "true"}).text
    assert tab.post("reset").status_code == 200
    assert tab.step("one").status_code == 200
    eid = tab.status()["data-episode"]
    status = sc.fragment(f"/play/s/{tab.sid}/status").by_id("play-status")
    assert status.find("button", id="end-episode") is not None
    ended = tab.post("end")
    assert ended.status_code == 200 and fragment(ended.text).find("button", id="end-episode") is None
    with EpisodeStore(studio_data / "episodes.db") as store:
        ep = store.get_episode(eid)
    assert ep.end_reason == "ended" and ep.step_count == 1
    refused = tab.step("two")
    assert refused.status_code == 409 and _code(refused) == "STEP_BEFORE_RESET"
    assert tab.post("reset").status_code == 200 and tab.step("again").status_code == 200
    assert tab.status()["data-episode"] != eid
    tab.post("close")
