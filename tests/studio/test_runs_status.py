"""Model runs' status on the studio's pages: a run whose every episode failed is "failed" with its
reason in the page (not only a tooltip); a cancelled run says so with counts by outcome, and its
cancelled partial episodes are left out of the statistics (page and saved summary)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rollout.fake_openai import make_app
from tests.server_utils import running_server
from tests.studio.conftest import StudioClient
from tests.studio.html import Node


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    with running_server(make_app()) as url:
        yield url + "/v1"


def _endpoint(sc: StudioClient, name: str, model_url: str, model: str) -> None:
    resp = sc.post("/models/endpoints", {"name": name, "base_url": model_url, "model": model}, htmx=False)
    assert resp.status_code == 303, resp.text[:1000]


def _start(sc: StudioClient, rid: str, endpoint: str, **fields: str) -> str:
    resp = sc.post("/models/runs", {"runtime": rid, "endpoint": endpoint, **fields}, htmx=False)
    assert resp.status_code == 303, resp.text[:2000]
    return resp.headers["location"].rsplit("/", 1)[-1]


def _progress(sc: StudioClient, run_id: str) -> Node:
    return sc.fragment(f"/models/runs/{run_id}/progress").find("section")


def _wait(sc: StudioClient, run_id: str, timeout_s: float = 60) -> Node:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        node = _progress(sc, run_id)
        if node.attrs["data-status"] != "running":
            return node
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} still running")


def test_a_run_whose_every_episode_failed_is_failed_with_its_reason(sc: StudioClient, echo_rid: str,
                                                                    model_url: str, studio_data: Path) -> None:  # fmt: skip
    _endpoint(sc, "always malformed", model_url, "malformed#runs-fail")
    run_id = _start(sc, echo_rid, "always malformed", episodes="3", concurrency="2", max_steps="2", label="all-fail")
    node = _wait(sc, run_id)
    assert node.attrs["data-status"] == "failed"
    reason = node.find(id="run-reason").text()
    assert "This run failed" in reason and "3 of 3 episodes" in reason
    assert node.find(id="run-counts").text().startswith("0 finished · 3 failed")
    errors = node.with_class("run-error")
    assert len(errors) == 3 and all(e.text().strip() for e in errors)  # each episode's error, in the table
    row = sc.page("/models").find("tr", data_run=run_id)
    assert row.attrs["data-status"] == "failed" and "3 of 3 episodes" in row.with_class("run-reason")[0].text()
    saved = json.loads((studio_data / "model_runs" / f"{run_id}.json").read_text())
    assert saved["status"] == "failed" and saved["error"].startswith("every episode failed")


def test_a_good_run_is_finished(sc: StudioClient, echo_rid: str, model_url: str) -> None:
    _endpoint(sc, "echo runs", model_url, "echo#runs-good")
    run_id = _start(sc, echo_rid, "echo runs", episodes="2", concurrency="2", max_steps="2")
    node = _wait(sc, run_id)
    assert node.attrs["data-status"] == "finished" and node.find(id="run-reason") is None
    assert node.find(id="run-counts").text().startswith("2 finished · of 2")
    link = node.find("a", class_="run-compare").attrs["href"]
    chooser = sc.page(link.replace("&amp;", "&"))
    assert chooser.by_id("compare-choose") is not None  # other episodes of the seed are offered there


def test_cancel_counts_and_statistics(sc: StudioClient, echo_rid: str, model_url: str, studio_data: Path) -> None:
    _endpoint(sc, "slow echo", model_url, "slow-0.2#runs-cancel")
    run_id = _start(sc, echo_rid, "slow echo", episodes="300", concurrency="2", max_steps="3", label="to-cancel")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # some episodes ended, others are mid-way
        node = _progress(sc, run_id)
        if node.find(id="run-counts").text().startswith(("2 finished", "3 finished", "4 finished")):
            break
        time.sleep(0.1)
    resp = sc.post(f"/models/runs/{run_id}/cancel", {})
    assert resp.status_code == 200
    node = _wait(sc, run_id)
    assert node.attrs["data-status"] == "cancelled" and node.find("h2").text() == "Cancelled"
    counts = node.find(id="run-counts").text()
    assert "300 / 300" not in counts and "cancelled" in counts and "skipped" in counts
    saved = json.loads((studio_data / "model_runs" / f"{run_id}.json").read_text())
    results = saved["results"]
    cancelled = [r for r in results if r["end_reason"] == "cancelled"]
    ran = [r for r in results if r["status"] == "finished" and r["end_reason"] != "cancelled"]
    assert cancelled and ran and len(results) == 300
    assert saved["summary"]["finished"] == len(ran)  # the cancelled partial episodes are not counted
    assert saved["summary"]["steps"]["total"] == sum(r["steps"] for r in ran)
    assert saved["summary"]["return"]["mean"] == pytest.approx(sum(r["total_reward"] for r in ran) / len(ran))
    assert f"{len(ran)} finished" in counts and f"{len(cancelled)} cancelled" in counts
    assert f"{len(ran)} ran to their end" in node.find(id="run-results").text()
    assert saved["status"] == "cancelled" and saved["error"] is None
