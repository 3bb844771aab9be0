"""Runs routes on a generated store (a GRPO run of 6 steps x 16 rollouts in groups of 4, CLI
rollouts by label, an episode with a long model call and a failed turn): the runs list, a run's
dashboard, a step's groups, a group's rollouts, the episode table's sorts, stats and selection,
the transcript, streamed exports, and bad input as 4xx."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.gen_store import generate
from openenv.recording import EpisodeFilter, EpisodeStore
from tests.studio.conftest import StudioClient, make_settings, running_studio
from webui.templating import format_number

RUN = "7" * 32
LONG = "f" * 32


@pytest.fixture(scope="module")
def runs_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("studio-runs")
    generate(data / "episodes.db", episodes=300, steps_per_episode=3, train_steps=6, rollouts=16, group_size=4,
             long_call_tokens=300)
    return data


@pytest.fixture(scope="module")
def runs_url(runs_data: Path) -> Iterator[str]:
    with running_studio(make_settings(runs_data, page_size=10)) as url:
        yield url


@pytest.fixture()
def rc(runs_url: str) -> Iterator[StudioClient]:
    with httpx.Client(base_url=runs_url, timeout=60.0, trust_env=False) as http:
        client = StudioClient(http)
        client.page("/episodes")
        yield client


def test_runs_list_shows_the_training_run_and_labelled_recordings(rc: StudioClient) -> None:
    doc = rc.page("/runs")
    keys = [r.attrs["data-run"] for r in doc.find_all("tr", class_="run-row")]
    assert RUN in keys and "label:rollout-000" in keys and "label:grpo-bench" not in keys
    trend = rc.http.get("/runs/trend", params={"run": RUN}, headers={"HX-Request": "true"}).text
    assert 'class="mono num run-count" data-count="96"' in trend and 'class="sparkline"' in trend


def test_dashboard_has_a_chart_per_metric_and_a_link_per_step(rc: StudioClient, runs_data: Path) -> None:
    doc = rc.page("/runs/dashboard", params={"run": RUN})
    charts = {svg.attrs["data-chart"] for svg in doc.with_class("run-chart")}
    assert charts == {"reward", "success", "length", "zero_spread", "reasons", "tokens"}
    reward = next(svg for svg in doc.with_class("run-chart") if svg.attrs["data-chart"] == "reward")
    hits = reward.with_class("step-hit")
    assert [h.attrs["data-step"] for h in hits] == [str(i) for i in range(6)]
    assert "step=3" in hits[3].attrs["href"] and "/runs/step" in hits[3].attrs["href"]
    rows = doc.find_all("tr", class_="step-row")
    assert len(rows) == 6 and rows[0].find_all("td")[1].text() == "16"
    assert doc.by_id("run-status").text() == "finished"
    with EpisodeStore(runs_data / "episodes.db") as store:  # the token columns: means and total of the step's rollouts
        step0 = store.list_episodes(EpisodeFilter(training_run_id=RUN, train_step=0), limit=100).items
    cells = rows[0]
    assert cells.with_class("tok-prompt")[0].text() == format_number(sum(e.prompt_tokens for e in step0) / 16)
    assert cells.with_class("tok-total")[0].text() == str(
        sum(e.prompt_tokens + e.completion_tokens for e in step0))
    assert "prompt" in doc.by_id("run-token-count").text()


def test_step_groups_come_worst_first_and_tied_groups_are_marked(rc: StudioClient, runs_data: Path) -> None:
    doc = rc.page("/runs/step", params={"run": RUN, "step": "2"})
    rows = doc.with_class("group-row")
    assert len(rows) == 4
    means = [float(r.find_all("td")[2].text()) for r in rows]
    assert means == sorted(means)
    with EpisodeStore(runs_data / "episodes.db") as store:
        tied = store.list_episodes(EpisodeFilter(training_run_id=RUN, train_step=2, group_id="s2-g0")).items
    assert len({e.trainer_reward for e in tied}) == 1  # group 0 (of every 7th) is generated tied
    row = next(r for r in rows if r.attrs["data-group"] == "s2-g0")
    assert "tied" in row.attrs["class"]


def test_group_view_puts_the_rollouts_side_by_side_best_first(rc: StudioClient) -> None:
    doc = rc.page("/runs/group", params={"run": RUN, "group": "s3-g1", "step": "3"})
    cards = doc.with_class("rollout")
    assert len(cards) == 4
    rewards = [float(c.attrs["data-reward"]) for c in cards]
    assert rewards == sorted(rewards, reverse=True)
    assert all((c.with_class("transcript-link") or [None])[0] is not None for c in cards)
    assert (cards[0].with_class("advantage") or [None])[0] is not None


def test_label_runs_group_by_seed(rc: StudioClient) -> None:
    doc = rc.page("/runs/dashboard", params={"run": "label:rollout-000"})
    assert (doc.with_class("run-chart") or [None])[0] is not None
    group = rc.page("/runs/group", params={"run": "label:rollout-000", "group": "3"})
    assert {c.find("dd", class_="mono").text() for c in group.with_class("rollout")}
    rc.page("/runs/group", status=400, params={"run": "label:rollout-000", "group": "x"})


@pytest.mark.parametrize(("path", "params", "status"), [
    ("/runs/dashboard", {}, 400),
    ("/runs/dashboard", {"run": "nosuchrun"}, 404),
    ("/runs/step", {"run": RUN, "step": "abc"}, 400),
    ("/runs/step", {"run": RUN, "step": "9" * 40}, 400),
    ("/runs/group", {"run": RUN}, 400),
    ("/runs/group", {"run": RUN, "group": "nope"}, 404),
    ("/episodes", {"min_length": "9" * 22}, 422),
    ("/episodes", {"min_return": "inf"}, 422),
    ("/episodes", {"sort": "nope"}, 422),
])
def test_bad_input_is_a_4xx(rc: StudioClient, path: str, params: dict, status: int) -> None:
    assert rc.http.get(path, params=params).status_code == status


def test_episode_table_sorts_counts_and_filters(rc: StudioClient) -> None:
    doc = rc.page("/episodes", params={"run": RUN, "sort": "reward"})
    rows = doc.find_all("tr", class_="episode-row")
    assert len(rows) == 10
    head = [th.text() for th in doc.find("table", class_="episodes").find_all("th")]
    assert any(t.startswith("trainer reward") for t in head)
    stats = rc.fragment("/episodes/stats", params={"run": RUN})
    assert stats.by_id("episode-stats").attrs["data-count"] == "96"
    step = rc.fragment("/episodes/stats", params={"run": RUN, "step": "1", "group": "s1-g2"})
    assert step.by_id("episode-stats").attrs["data-count"] == "4"
    seed = rc.page("/episodes", params={"seed": "7", "label": "rollout-000"})
    assert seed.find_all("tr", class_="episode-row")
    asc = rc.page("/episodes", params={"sort": "length", "dir": "asc"})
    assert asc.find("th", aria_sort="ascending") is not None


def test_selection_compares_exports_and_deletes(rc: StudioClient) -> None:
    doc = rc.page("/episodes", params={"label": "rollout-000"})
    ids = [r.attrs["data-episode"] for r in doc.find_all("tr", class_="episode-row")][:3]
    cmp = rc.http.get("/episodes/selection", params={"action": "compare", "ids": ids[:2]})
    assert cmp.status_code == 303 and f"a={ids[0]}" in cmp.headers["location"]
    assert rc.http.get("/episodes/selection", params={"action": "compare", "ids": ids}).status_code == 400
    exp = rc.http.get("/episodes/selection", params={"action": "export", "ids": ids})
    assert exp.status_code == 200 and [json.loads(line)["id"] for line in exp.text.splitlines()] == ids
    gone = rc.post("/episodes/delete", {"ids": ids[2:3]}, htmx=False)
    assert gone.status_code == 303 and "deleted=1" in gone.headers["location"]
    assert rc.http.get(f"/episodes/{ids[2]}").status_code == 404
    assert rc.post("/episodes/delete", {}, htmx=False).status_code == 400


def test_transcript_shows_each_turn_and_the_failed_one(rc: StudioClient) -> None:
    doc = rc.page(f"/episodes/{LONG}/transcript")
    turns = doc.with_class("turn")
    assert [t.attrs["data-index"] for t in turns] == ["0", "1", "2"]
    first = turns[1].with_class("chat-message")
    assert [m.attrs["class"].split()[1] for m in first][:3] == ["role-system", "role-user", "role-assistant"]
    failed = turns[2]
    assert "failed-turn" in failed.attrs["class"]
    assert "the reply holds no tool call" in failed.with_class("role-error")[0].text()
    assert rc.http.get(f"/episodes/{LONG[:10]}/transcript").status_code == 200  # an id prefix


def test_jsonl_export_streams_every_matching_episode(rc: StudioClient, runs_data: Path) -> None:
    with rc.http.stream("GET", "/episodes/export", params={"label": "rollout-000"}) as resp:
        assert resp.status_code == 200 and "attachment" in resp.headers["content-disposition"]
        lines = [line for line in resp.iter_lines() if line]
    with EpisodeStore(runs_data / "episodes.db") as store:
        expected = [e.id for e in store.iter_episodes(EpisodeFilter(label="rollout-000"))]
    assert [json.loads(line)["id"] for line in lines] == expected and len(expected) > 200


def test_deleting_a_parent_says_what_happens_to_its_forks(rc: StudioClient, runs_data: Path) -> None:
    with EpisodeStore(runs_data / "episodes.db") as store:
        run = store.create_run(env_name="echo")
        parent = store.start_episode(run, observation={"m": ""})
        store.append_step(parent, 1, action={"m": "a"}, observation={"m": "a"}, reward=1.0)
        child = store.start_episode(run, observation={"m": ""})
        store.mark_fork(child, parent, 1)
    doc = rc.page(f"/episodes/{parent}")
    confirm = doc.find("form", action=f"/episodes/{parent}/delete").attrs["hx-confirm"]
    assert "Its 1 fork stays" in confirm
    assert doc.find("dd", id="fork-parent") is None
    assert rc.page(f"/episodes/{child}").by_id("fork-parent").find("a") is not None
    assert rc.post(f"/episodes/{parent}/delete", htmx=False).status_code == 303
    shown = rc.page(f"/episodes/{child}").by_id("fork-parent")
    assert shown.find("a") is None and "deleted" in shown.text()
    assert rc.page(f"/episodes/{child}").find("a", id="compare-parent") is None


def test_an_id_prefix_opens_the_episode_and_times_carry_their_zone(rc: StudioClient) -> None:
    doc = rc.page(f"/episodes/{LONG[:8]}")
    assert doc.by_id("episode").attrs["data-episode"] == LONG
    assert rc.http.get(f"/episodes/{LONG[:8]}/tokens").status_code == 200
    assert rc.http.get("/episodes/zzzz").status_code == 404
    # ambiguous (every generated id starts 0000; an episode other tests add has a random id): never a 500
    assert rc.http.get("/episodes/0000").status_code == 400
    text = doc.by_id("episode").text()
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (UTC|[A-Z]{2,5}|[+-]\d{4})", text), text[:300]


def test_a_capture_session_is_not_offered_an_environment(rc: StudioClient, runs_data: Path) -> None:
    with EpisodeStore(runs_data / "episodes.db") as store:
        eid = store.start_episode(store.create_run(env_name="capture", source="capture", provider="capture"),
                                  observation={"session": "s1"})
    doc = rc.page(f"/episodes/{eid}")
    assert "openenv capture" in doc.by_id("capture-note").text()
    assert "Launch a" not in doc.text() and not doc.with_class("fork-hint")


def test_two_runs_compared_per_seed_and_by_distribution(rc: StudioClient) -> None:
    doc = rc.page("/runs/compare", params={"a": RUN, "b": "label:rollout-000"})
    assert doc.by_id("run-compare").attrs["data-b"] == "label:rollout-000"
    seeds = doc.with_class("seed-row")
    assert seeds and doc.by_id("seed-summary").find("strong") is not None
    assert doc.find("svg", data_chart="histogram") is not None
    assert len(doc.find("table", class_="compare-steps").find_all("tr")) > 6
    dash = rc.page("/runs/dashboard", params={"run": RUN})
    assert dash.by_id("run-compare-form").find("option", value="label:rollout-000") is not None
    assert rc.http.get("/runs/compare", params={"a": RUN}).status_code == 400
    assert rc.http.get("/runs/compare", params={"a": RUN, "b": "nope"}).status_code == 404


def test_a_background_export_reports_progress_then_its_file(rc: StudioClient, runs_data: Path) -> None:
    form = rc.page("/episodes", params={"label": "rollout-000"}).by_id("export-job-form")
    fields = {i.attrs["name"]: i.attrs.get("value", "") for i in form.find_all("input")}
    assert fields["label"] == "rollout-000"
    started = rc.post("/episodes/export/jobs", fields, htmx=False)
    assert started.status_code == 303
    job_url = started.headers["location"]
    for _ in range(200):
        job = rc.page(job_url).by_id("export-job")
        if job.attrs["data-status"] != "running":
            break
        time.sleep(0.05)
    assert job.attrs["data-status"] == "done"
    body = rc.http.get(job.by_id("export-download").attrs["href"]).text
    with EpisodeStore(runs_data / "episodes.db") as store:
        expected = store.count_episodes(EpisodeFilter(label="rollout-000"))
    assert len(body.splitlines()) == expected == int(job.attrs["data-done"])
    assert rc.http.get("/episodes/export/jobs/nope").status_code == 404
    assert rc.post("/episodes/export/jobs", {"min_length": "x"}, htmx=False).status_code == 400
