"""Episode routes on a store filled directly and by Play: list (filters, pages, live refresh),
episode page (timeline, chart, diff, value), live fragment, re-run, export, notes/tags, delete."""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from openenv.recording import EpisodeStore
from tests.studio.conftest import StudioClient
from tests.studio.html import fragment, page


@pytest.fixture(scope="module")
def store(studio_data: Path) -> Iterator[EpisodeStore]:
    s = EpisodeStore(studio_data / "episodes.db")
    yield s
    s.close()


@pytest.fixture(scope="module")
def grid_run(store: EpisodeStore) -> dict[str, list[str]]:
    """Seven finished 'grid' episodes (scripted) and one unfinished; lengths 0..7."""
    run = store.create_run(env_name="grid", source="programmatic", label="ppo-7")
    ids: list[str] = []
    for n in range(7):
        eid = store.start_episode(run, reset_kwargs={"seed": n}, observation={"pos": 0, "text": "start"})
        for i in range(1, n + 1):
            store.append_step(eid, i, action={"move": i}, observation={"pos": i, "text": f"at {i}"},
                              reward=1.0, done=i == n)
        store.finish_episode(eid, "closed")
        ids.append(eid)
    live = store.start_episode(run, observation={"pos": 0})
    return {"finished": ids, "live": [live]}


def test_list_full_page_and_fragment(sc: StudioClient, grid_run: dict) -> None:
    doc = sc.page("/episodes", params={"env": "grid"})
    rows = doc.find_all("tr", class_="episode-row")
    assert len(rows) == 5  # page_size=5 in this session
    assert doc.find("a", aria_current="page").text() == "Episodes"
    env_select = doc.by_id("episode-filters").find("select", name="env")
    assert env_select.find("option", value="grid").attrs.get("selected") == ""
    frag = sc.fragment("/episodes", params={"env": "grid"})
    assert frag.by_id("episode-list").attrs["hx-trigger"].startswith("every 2s")
    assert frag.find("form", id="episode-filters") is None


def test_pagination_with_cursor(sc: StudioClient, grid_run: dict) -> None:
    doc = sc.page("/episodes", params={"env": "grid"})
    next_href = doc.by_id("next-page").attrs["href"]
    assert "cursor=" in next_href
    second = sc.page(next_href)
    ids = [r.attrs["data-episode"] for r in doc.find_all("tr", class_="episode-row")]
    ids2 = [r.attrs["data-episode"] for r in second.find_all("tr", class_="episode-row")]
    assert len(ids2) == 3 and not set(ids) & set(ids2)
    assert set(ids + ids2) == set(grid_run["finished"] + grid_run["live"])
    assert "hx-trigger" not in second.by_id("episode-list").attrs  # only the first page refreshes


def test_filters(sc: StudioClient, grid_run: dict) -> None:
    def ids(**params: str) -> set[str]:
        frag = sc.fragment("/episodes", params={"env": "grid", **params})
        return {r.attrs["data-episode"] for r in frag.find_all("tr", class_="episode-row")}

    assert ids(finished="no") == set(grid_run["live"])
    assert ids(min_length="6") == set(grid_run["finished"][6:])
    assert ids(min_return="5", max_return="5.5") == {grid_run["finished"][5]}
    assert ids(label="ppo-7", finished="yes", max_length="2") == set(grid_run["finished"][:3])
    assert ids(since="2000-01-01", until="2999-12-31", max_length="0") == {grid_run["finished"][0], *grid_run["live"]}
    assert ids(source="human") == set()


def test_invalid_filter_is_shown_not_raised(sc: StudioClient) -> None:
    resp = sc.http.get("/episodes", params={"since": "yesterday", "min_length": "x"})
    assert resp.status_code == 422
    alert = page(resp.text).by_id("episode-list")
    assert "a date like" in alert.text() and "a whole number" in alert.text()


def test_garbage_cursor_is_a_422_with_a_message(sc: StudioClient) -> None:
    resp = sc.http.get("/episodes", params={"cursor": "garbage"})
    assert resp.status_code == 422
    assert "cursor: not a page of this list" in page(resp.text).by_id("episode-list").text()
    resp = sc.http.get("/episodes", params={"cursor": "garbage"}, headers={"HX-Request": "true"})
    assert resp.status_code == 422 and "cursor: not a page" in fragment(resp.text).by_id("episode-list").text()


def test_episode_page_timeline_chart_and_diff(sc: StudioClient, grid_run: dict) -> None:
    eid = grid_run["finished"][6]
    doc = sc.page(f"/episodes/{eid}", params={"step": "2"})
    view = doc.by_id("step-view")
    assert view.attrs["data-index"] == "2" and view.attrs["data-last"] == "6"
    slider = doc.by_id("step-slider")
    assert (slider.attrs["min"], slider.attrs["max"], slider.attrs["value"]) == ("0", "6", "2")
    assert "move" in view.find("div", class_="step-action").text()
    changed = view.find("li", class_="diff-changed")
    assert changed is not None and "pos" in changed.text()
    chart = doc.by_id("live").find("svg")
    assert chart.attrs["data-points"] == "7" and chart.find("polyline") is not None
    assert doc.by_id("live").attrs["data-finished"] == "yes" and "hx-trigger" not in doc.by_id("live").attrs
    assert doc.by_id("total-return").text() == "6"
    assert len(view.find_all("tr", data_index="3")) == 1


def test_step_fragment_clamps_and_reset_step(sc: StudioClient, grid_run: dict) -> None:
    eid = grid_run["finished"][3]
    frag = sc.fragment(f"/episodes/{eid}/step", params={"step": "99"})
    assert frag.by_id("step-view").attrs["data-index"] == "3"
    assert frag.by_id("next-step").attrs["aria-disabled"] == "true"
    first = sc.fragment(f"/episodes/{eid}/step", params={"step": "0"})
    assert "first observation" in first.by_id("step-view").text()
    assert first.by_id("prev-step").attrs["aria-disabled"] == "true"
    assert sc.page(f"/episodes/{eid}/step", params={"step": "1"}).by_id("step-view").attrs["data-index"] == "1"


def test_value_show_all(sc: StudioClient, grid_run: dict) -> None:
    eid = grid_run["finished"][2]
    frag = sc.fragment(f"/episodes/{eid}/value/1", params={"path": "/observation/text"})
    assert frag.text().strip() == "at 1"
    sc.fragment(f"/episodes/{eid}/value/1", status=404, params={"path": "/observation/nope"})
    sc.fragment(f"/episodes/{eid}/value/42", status=404, params={"path": ""})


def test_live_fragment_polls_until_finished(sc: StudioClient, store: EpisodeStore, grid_run: dict) -> None:
    eid = grid_run["live"][0]
    live = sc.fragment(f"/episodes/{eid}/live").by_id("live")
    assert live.attrs["hx-trigger"] == "every 1s" and live.attrs["data-steps"] == "0"
    store.append_step(eid, 1, action={"move": 1}, observation={"pos": 1}, reward=0.5)
    live = sc.fragment(f"/episodes/{eid}/live").by_id("live")
    assert live.attrs["data-steps"] == "1" and "recording" in live.text()
    store.finish_episode(eid, "closed")
    live = sc.fragment(f"/episodes/{eid}/live").by_id("live")
    assert "hx-trigger" not in live.attrs and live.attrs["data-finished"] == "yes"
    assert sc.http.get(f"/episodes/{eid}/live").status_code == 303


def test_unknown_episode(sc: StudioClient) -> None:
    doc = sc.page("/episodes/nope", status=404)
    assert "no episode 'nope'" in doc.by_id("main").text()
    sc.fragment("/episodes/nope/step", status=404)
    assert sc.post("/episodes/nope/delete").status_code == 404


def _played_episode(sc: StudioClient, echo_rid: str, messages: list[str]) -> str:
    html = sc.open_play(echo_rid).text
    sid = html.split('data-session="', 1)[1].split('"', 1)[0]
    sc.post(f"/play/s/{sid}/reset", {"mode": "form"})
    for m in messages:
        assert sc.post(f"/play/s/{sid}/step", {"a.message": m}).status_code == 200
    resp = sc.post(f"/play/s/{sid}/step", {"a.message": "last"})
    eid = fragment(resp.text).by_id("play-episode").find("a").attrs["href"].rsplit("/", 1)[1]
    sc.post(f"/play/s/{sid}/close")
    return eid


def test_rerun_export_notes_delete(sc: StudioClient, echo_rid: str, store: EpisodeStore) -> None:
    eid = _played_episode(sc, echo_rid, ["a", "bb"])
    doc = sc.page(f"/episodes/{eid}")
    option = doc.by_id("rerun-runtime").find("option", value=echo_rid)
    assert option is not None
    resp = sc.post(f"/episodes/{eid}/rerun", {"runtime": echo_rid})
    report = fragment(resp.text).find("div")
    assert report.attrs["data-deterministic"] == "yes" and "4 steps" in report.text()
    resp = sc.post(f"/episodes/{eid}/rerun", {"runtime": echo_rid}, htmx=False)
    assert "no divergence" in resp.text
    resp = sc.http.get(f"/episodes/{eid}/export", params={"format": "jsonl"})
    assert resp.status_code == 200 and "attachment" in resp.headers["content-disposition"]
    exported = json.loads(resp.text.splitlines()[0])
    assert exported["id"] == eid and len(exported["steps"]) == 4
    resp = sc.http.get(f"/episodes/{eid}/export", params={"format": "parquet"})
    assert pq.read_table(io.BytesIO(resp.content)).num_rows >= 1
    assert sc.http.get(f"/episodes/{eid}/export", params={"format": "xml"}).status_code == 400
    resp = sc.http.get("/episodes/export", params={"source": "human", "format": "jsonl"})
    assert eid in resp.text
    resp = sc.post(f"/episodes/{eid}/notes", {"notes": "good run", "tags": "keep, demo,keep"})
    notes = fragment(resp.text).by_id("notes")
    assert notes.find("input", name="tags").attrs["value"] == "demo, keep"
    assert store.get_episode(eid).notes == "good run"
    assert sc.fragment("/episodes", params={"tag": "demo"}).find("tr", data_episode=eid) is not None
    resp = sc.post(f"/episodes/{eid}/delete")
    assert resp.headers["HX-Redirect"] == "/episodes"
    sc.page(f"/episodes/{eid}", status=404)


def test_notes_and_delete_without_javascript(sc: StudioClient, store: EpisodeStore) -> None:
    run = store.create_run(env_name="plain", source="programmatic")
    eid = store.start_episode(run, observation={"x": 1})
    resp = sc.post(f"/episodes/{eid}/notes", {"notes": "", "tags": ""}, htmx=False)
    assert resp.status_code == 303 and resp.headers["location"] == f"/episodes/{eid}"
    assert store.get_episode(eid).notes is None
    resp = sc.post(f"/episodes/{eid}/notes", {"tags": "x" * 101})
    assert resp.status_code == 400 and "at most 100" in resp.text
    resp = sc.post(f"/episodes/{eid}/delete", htmx=False)
    assert resp.status_code == 303 and resp.headers["location"] == "/episodes"


def test_rerun_reports_divergence(sc: StudioClient, echo_rid: str, store: EpisodeStore) -> None:
    run = store.create_run(env_name="echo", source="programmatic")
    eid = store.start_episode(run, observation={"echoed_message": "Echo environment ready!", "message_length": 0},
                              reward=0.0)
    store.append_step(eid, 1, action={"message": "hi"}, observation={"echoed_message": "HI", "message_length": 2},
                      reward=0.2)
    resp = sc.post(f"/episodes/{eid}/rerun", {"runtime": echo_rid})
    report = fragment(resp.text).find("div")
    assert report.attrs["data-deterministic"] == "no"
    assert "Diverged at step 1" in report.text() and "echoed_message" in report.text()
    assert sc.post(f"/episodes/{eid}/rerun", {"runtime": "gone"}).status_code == 404


def test_rerun_job_status_route(sc: StudioClient, echo_rid: str, store: EpisodeStore) -> None:
    run = store.create_run(env_name="echo", source="programmatic")
    eid = store.start_episode(run, observation={"echoed_message": "Echo environment ready!", "message_length": 0},
                              reward=0.0)
    resp = sc.post(f"/episodes/{eid}/rerun", {"runtime": echo_rid})
    job_id = fragment(resp.text).find("div").attrs["id"].removeprefix("rerun-")
    done = sc.fragment(f"/episodes/{eid}/rerun/{job_id}").find("div")
    assert done.attrs["data-status"] == "done" and "hx-trigger" not in done.attrs
    assert sc.page(f"/episodes/{eid}/rerun/{job_id}").by_id("rerun-result").find("div") is not None
    sc.fragment(f"/episodes/{eid}/rerun/nope", status=404)


def test_slow_rerun_is_a_polled_job(store: EpisodeStore, echo_url: str) -> None:
    from webui.studio.reruns import Reruns

    run = store.create_run(env_name="echo", source="programmatic")
    eid = store.start_episode(run, observation={"echoed_message": "Echo environment ready!", "message_length": 0},
                              reward=0.0)
    for i in range(1, 51):
        store.append_step(eid, i, action={"message": "m"}, observation={"echoed_message": "m", "message_length": 1},
                          reward=0.1)

    async def scenario() -> tuple[bool, bool, int | None]:
        jobs = Reruns(store, inline_wait_s=0)
        job = await jobs.start(eid, "echo", echo_url)
        first = job.running
        await asyncio.wait_for(job.task, 60)
        await jobs.close()
        return first, job.running, job.report.steps_compared if job.report else None

    assert _run(scenario()) == (True, False, 51)


def test_rerun_on_a_dead_server_is_reported(store: EpisodeStore) -> None:
    from webui.studio.reruns import Reruns

    run = store.create_run(env_name="echo", source="programmatic")
    eid = store.start_episode(run, observation={})

    async def scenario() -> str:
        job = await Reruns(store).start(eid, "echo", "http://127.0.0.1:9")
        await asyncio.wait_for(job.task, 30)
        return job.error

    assert "Could not connect" in _run(scenario())


def _run(coro):  # noqa: ANN001, ANN202
    """asyncio.run in a thread of its own (a browser test's loop may be running in this one)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def test_recorded_state_is_shown(sc: StudioClient, store: EpisodeStore) -> None:
    run = store.create_run(env_name="stateful", source="programmatic")
    eid = store.start_episode(run, observation={"o": 0}, state={"episode_id": "e1", "step_count": 0})
    store.append_step(eid, 1, action={"a": 1}, observation={"o": 1}, state={"episode_id": "e1", "step_count": 1})
    view = sc.fragment(f"/episodes/{eid}/step", params={"step": "1"}).by_id("step-view")
    state = view.find("details", class_="obs-meta step-state")
    assert state is not None and "step_count" in state.text()
    value = sc.fragment(f"/episodes/{eid}/value/1", params={"path": "/state/step_count"})
    assert value.text().strip() == "1"


def test_rerun_launches_an_env_when_none_runs(tmp_path: Path) -> None:
    """An episode of a bundled env with nothing of its kind running: the page offers to launch
    one; the re-run job starts it (process provider), then replays the episode on it."""
    from tests.studio.conftest import make_settings, running_studio

    settings = make_settings(tmp_path, page_size=5)
    with EpisodeStore(tmp_path / "episodes.db") as store:
        run = store.create_run(env_name="echo", source="programmatic")
        eid = store.start_episode(run, observation={"echoed_message": "Echo environment ready!", "message_length": 0},
                                  reward=0.0)
        store.append_step(eid, 1, action={"message": "hey"}, observation={"echoed_message": "hey", "message_length": 3},
                          reward=0.3)
        other = store.start_episode(store.create_run(env_name="no-such-env"), observation={})
    with running_studio(settings) as url, httpx.Client(base_url=url, timeout=60.0, trust_env=False) as http:
        sc = StudioClient(http)
        doc = sc.page(f"/episodes/{eid}")
        assert doc.find(id="rerun-runtime") is None and doc.find(id="rerun-launch-button") is not None
        assert sc.page(f"/episodes/{other}").find(id="rerun-launch-button") is None  # nothing to launch
        resp = sc.post(f"/episodes/{eid}/rerun", {"runtime": "launch"})
        job = fragment(resp.text).find("div")
        deadline = time.monotonic() + 90
        while job.attrs["data-status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.2)
            job = sc.fragment(f"/episodes/{eid}/rerun/{job.attrs['id'].removeprefix('rerun-')}").find("div")
        assert job.attrs["data-status"] == "done" and job.attrs["data-deterministic"] == "yes", job.text()
        assert sc.page("/envs").find("tr", data_target="echo") is not None
        assert sc.page(f"/episodes/{eid}").by_id("rerun-runtime").find("option") is not None  # now running
        assert sc.post(f"/episodes/{other}/rerun", {"runtime": "launch"}).status_code == 400
