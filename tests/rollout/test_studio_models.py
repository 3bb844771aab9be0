"""The studio's "Run a model" page and the Play takeover over HTTP (the pages' own requests),
against a real studio, an echo env it launched and the loopback model server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openenv.recording import EpisodeStore
from tests.studio.conftest import StudioClient, make_settings, running_studio
from tests.studio.html import fragment, page
from tests.webui.formsim import submitted


def _step(sc: StudioClient, html: str, sid: str, message: str) -> str:
    """Submit the Play page's step form; the id of the episode being recorded."""
    start = html.index('<form id="step-form"')
    data = submitted(html[start : html.index("</form>", start)])
    data["a.message"] = [message]
    resp = sc.post(f"/play/s/{sid}/step", data)
    assert resp.status_code == 200, resp.text[:1000]
    return fragment(resp.text).find("p", id="play-episode").find("a").attrs["href"].rsplit("/", 1)[-1]


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data = tmp_path_factory.mktemp("studio-models")
    with running_studio(make_settings(data, project="rollout-models")) as url:
        yield url, data


@pytest.fixture()
def sc(studio: tuple[str, Path]) -> Iterator[StudioClient]:
    with httpx.Client(base_url=studio[0], timeout=60.0, trust_env=False) as http:
        client = StudioClient(http)
        client.page("/envs")
        yield client


@pytest.fixture(scope="module")
def echo_rid(studio: tuple[str, Path]) -> str:
    with httpx.Client(base_url=studio[0], timeout=60.0, trust_env=False) as http:
        return StudioClient(http).launch("echo")


def _save_endpoint(sc: StudioClient, name: str, model_url: str, model: str, **extra: str) -> None:
    resp = sc.post("/models/endpoints", {"name": name, "base_url": model_url, "model": model, **extra}, htmx=False)
    assert resp.status_code == 303, resp.text[:1000]


def _wait_run(sc: StudioClient, run_id: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        node = sc.fragment(f"/models/runs/{run_id}/progress")
        if node.find("section").attrs["data-status"] != "running":
            return
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} still running after {timeout_s}s")


def _start(sc: StudioClient, rid: str, endpoint: str, **fields: str) -> str:
    resp = sc.post("/models/runs", {"runtime": rid, "endpoint": endpoint, **fields}, htmx=False)
    assert resp.status_code == 303, resp.text[:2000]
    return resp.headers["location"].rsplit("/", 1)[-1]


def test_run_a_model_records_and_compares(sc: StudioClient, echo_rid: str, model_url: str,
                                          studio: tuple[str, Path]) -> None:  # fmt: skip
    _save_endpoint(sc, "fake echo", model_url, "echo", api_key="sk-typed-secret", temperature="0.5")
    _save_endpoint(sc, "fake fenced", model_url, "fenced")
    saved = json.loads((studio[1] / "model_endpoints.json").read_text())
    assert {e["name"] for e in saved} == {"fake echo", "fake fenced"} and "sk-typed" not in json.dumps(saved)
    page = sc.page("/models")
    assert page.find("li", data_endpoint="fake echo") is not None
    a = _start(sc, echo_rid, "fake echo", episodes="4", concurrency="2", max_steps="3", seed="7", label="studio-a")
    b = _start(sc, echo_rid, "fake fenced", episodes="2", concurrency="2", max_steps="2", seed="7", label="studio-b")
    _wait_run(sc, a)
    _wait_run(sc, b)
    node = sc.fragment(f"/models/runs/{a}/progress")
    rows = node.find_all("tr", data_status="finished")
    assert len(rows) == 4 and {r.attrs["data-end"] for r in rows} == {"max_steps"}
    assert node.find("table", id="run-results") is not None
    cmp = sc.page("/models/compare", params={"a": a, "b": b})
    seeds = {r.attrs["data-seed"] for r in cmp.find_all("tr") if "data-seed" in r.attrs}
    assert seeds == {"7", "8", "9", "10"}
    side = cmp.find("tr", data_seed="7").find("a", class_="button small seed-compare").attrs["href"]
    assert side.startswith("/episodes/compare?a=")  # the two runs' episodes of seed 7, step by step
    both = sc.page(side.replace("&amp;", "&"))
    assert "seed 7" in both.by_id("compare-summary").text() and both.by_id("compare-rows") is not None
    with EpisodeStore(studio[1] / "episodes.db") as store:
        eps = [e for e in store.iter_episodes() if e.label == "studio-a"]
        assert len(eps) == 4 and all(e.source == "model" and e.step_count == 3 for e in eps)
        assert store.load_steps(eps[0].id)[1].agent["model"] == "echo"
        eid = eps[0].id
    step = sc.page(f"/episodes/{eid}", params={"step": "2"})
    assert step.find("section", id="agent-turn") is not None
    assert '{"message":"m2"}' in step.find("pre", id="agent-completion").text()
    assert b"sk-typed-secret" not in b"".join(f.read_bytes() for f in studio[1].rglob("*") if f.is_file())
    assert (studio[1] / "model_runs" / f"{a}.json").exists()


def test_bad_run_input_is_a_clear_error(sc: StudioClient, echo_rid: str, model_url: str) -> None:
    resp = sc.post("/models/endpoints", {"name": "x", "base_url": "ftp://nope", "model": "m"}, htmx=False)
    assert resp.status_code == 422 and "must start with http" in resp.text
    _save_endpoint(sc, "needs key", model_url, "echo", api_key_env="ROLLOUT_TEST_UNSET_VAR")
    resp = sc.post("/models/runs", {"runtime": echo_rid, "endpoint": "needs key"}, htmx=False)
    assert resp.status_code == 422 and "ROLLOUT_TEST_UNSET_VAR is not set" in resp.text
    resp = sc.post("/models/runs", {"runtime": echo_rid, "endpoint": "needs key", "episodes": "lots"}, htmx=False)
    assert resp.status_code == 422 and "episodes must be a whole number" in resp.text
    assert sc.http.get("/models/runs/ffffffff").status_code == 404


def test_takeover_in_play_records_who_acted(sc: StudioClient, echo_rid: str, model_url: str,
                                            studio: tuple[str, Path]) -> None:  # fmt: skip
    _save_endpoint(sc, "taker", model_url, "echo")
    html = sc.open_play(echo_rid).text
    play = page(html)
    sid = play.find("div", id="env-page").attrs["data-session"]
    assert play.find("section", id="takeover") is not None
    assert sc.post(f"/play/s/{sid}/reset", {}).status_code == 200
    _step(sc, html, sid, "by hand")
    resp = sc.post(f"/play/s/{sid}/model", {"endpoint": "taker", "steps": "3"})
    assert resp.status_code == 200, resp.text
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        node = sc.fragment(f"/play/s/{sid}/model")
        if node.find("section", id="takeover").attrs["data-status"] != "running":
            break
        time.sleep(0.1)
    assert node.find("section", id="takeover").attrs["data-status"] == "finished"
    assert node.find("section", id="takeover").attrs["data-taken"] == "3"
    eid = _step(sc, html, sid, "mine again")
    with EpisodeStore(studio[1] / "episodes.db") as store:
        steps = store.load_steps(eid)
    assert [s.actor for s in steps] == [None, "human", "model", "model", "model", "human"]
    assert steps[2].action == {"message": "m1"} and "by hand" in steps[2].agent["messages"][1]["content"]
    assert steps[5].action == {"message": "mine again"}
    export = sc.http.get(f"/episodes/{eid}/export", params={"format": "jsonl"})
    assert export.status_code == 200
    line = json.loads(export.text.splitlines()[0])
    assert [s.get("actor") for s in line["steps"]] == [None, "human", "model", "model", "model", "human"]


def test_take_back_stops_the_model(sc: StudioClient, echo_rid: str, model_url: str) -> None:
    _save_endpoint(sc, "slow taker", model_url, "slow-0.5")
    sid = page(sc.open_play(echo_rid).text).find("div", id="env-page").attrs["data-session"]
    sc.post(f"/play/s/{sid}/reset", {})
    node = fragment(sc.post(f"/play/s/{sid}/model", {"endpoint": "slow taker", "steps": "50"}).text)
    assert node.find("section", id="takeover").attrs["data-status"] == "running"
    time.sleep(1.2)
    node = fragment(sc.post(f"/play/s/{sid}/takeback").text)
    section = node.find("section", id="takeover")
    assert section.attrs["data-status"] == "taken back" and 0 < int(section.attrs["data-taken"]) < 50


def test_cancel_a_run(sc: StudioClient, echo_rid: str, model_url: str, studio: tuple[str, Path]) -> None:
    _save_endpoint(sc, "slow run", model_url, "slow-0.3")
    run_id = _start(sc, echo_rid, "slow run", episodes="20", concurrency="2", max_steps="50", label="to-cancel")
    time.sleep(1.0)
    node = fragment(sc.post(f"/models/runs/{run_id}/cancel").text)
    assert node.find("section", id="model-progress").attrs["data-status"] == "cancelled"
    saved = json.loads((studio[1] / "model_runs" / f"{run_id}.json").read_text())
    assert saved["status"] == "cancelled" and saved["summary"]["skipped"] > 0
    with EpisodeStore(studio[1] / "episodes.db") as store:
        eps = [e for e in store.iter_episodes() if e.label == "to-cancel"]
        assert eps and all(e.end_reason == "cancelled" for e in eps)


def test_fork_with_a_model_checks_its_input_before_opening_anything(sc: StudioClient, echo_rid: str, model_url: str,
                                                                    studio: tuple[str, Path]) -> None:  # fmt: skip
    _save_endpoint(sc, "fork model", model_url, "echo")
    _save_endpoint(sc, "fork keyless", model_url, "echo", api_key_env="ROLLOUT_TEST_UNSET_VAR")
    run = _start(sc, echo_rid, "fork model", episodes="1", concurrency="1", max_steps="2", label="fork-src")
    _wait_run(sc, run)
    with EpisodeStore(studio[1] / "episodes.db") as store:
        (ep,) = [e for e in store.iter_episodes() if e.label == "fork-src"]
    step = sc.page(f"/episodes/{ep.id}", params={"step": "2"})
    form = step.by_id("fork-model-form")
    assert form.find("input", name="step").attrs["value"] == "1"
    base = {"step": "1", "runtime": echo_rid}
    for fields, words in (({"model_endpoint": "fork model", "model_steps": "lots"}, "1 to 1000 steps"),
                          ({"model_endpoint": "fork model", "model_steps": "0"}, "1 to 1000 steps"),
                          ({"model_endpoint": "nobody"}, "no saved model endpoint"),
                          ({"model_endpoint": "fork keyless"}, "ROLLOUT_TEST_UNSET_VAR is not set")):
        resp = sc.post(f"/episodes/{ep.id}/fork", {**base, **fields})
        assert 400 <= resp.status_code < 500 and words in resp.text, (fields, resp.text[:500])
    with EpisodeStore(studio[1] / "episodes.db") as store:
        assert store.list_forks(ep.id) == []  # nothing was forked for a refused request
    ok = sc.post(f"/episodes/{ep.id}/fork", {**base, "model_endpoint": "fork model", "model_steps": "1"})
    assert ok.status_code == 200 and "HX-Redirect" in ok.headers
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with EpisodeStore(studio[1] / "episodes.db") as store:
            forks = store.list_forks(ep.id)
            steps = store.load_steps(forks[0].id) if forks else []
        if len(steps) == 3:
            break
        time.sleep(0.2)
    assert forks[0].fork_step == 1 and [s.actor for s in steps][2:] == ["model"]
