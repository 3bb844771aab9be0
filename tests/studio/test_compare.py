"""The episode comparison page (``/episodes/compare``) over episodes of every writer: the studio's
Play, ``openenv rollout`` (a subprocess), ``record`` from a script, and a capture session
(``CaptureRecorder``, source "capture"); aligned by step, the first divergence marked."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.core import GenericEnvClient
from openenv.recording import EpisodeFilter, EpisodeStore, record
from tests.rollout.fake_openai import make_app
from tests.server_utils import running_server
from tests.studio.conftest import StudioClient
from tests.studio.html import Node, fragment, page
from tests.webui.formsim import submitted


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    with running_server(make_app()) as url:
        yield url + "/v1"


def _store(studio_data: Path) -> EpisodeStore:
    return EpisodeStore(studio_data / "episodes.db")


def _scripted(studio_data: Path, url: str, messages: list[str], *, seed: int = 3, label: str = "script") -> str:
    with _store(studio_data) as store, record(GenericEnvClient(base_url=url).sync(), store=store, label=label) as env:
        env.reset(seed=seed)
        for m in messages:
            env.step({"message": m})
        return env.episode_id


def _rollout(studio_data: Path, echo_url: str, model_url: str, model: str, label: str, steps: int) -> str:
    p = subprocess.run([sys.executable, "-m", "openenv", "rollout", "--env", echo_url, "--model-url", model_url,
                        "--model", model, "--episodes", "1", "--max-steps", str(steps), "--seed", "11",
                        "--label", label, "--db", str(studio_data / "episodes.db"), "--quiet"],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    with _store(studio_data) as store:
        (ep,) = store.list_episodes(EpisodeFilter(label=label)).items
        return ep.id


def _rows(doc: Node) -> list[Node]:
    return doc.by_id("compare-rows").with_class("cmp-row")


def _compare(sc: StudioClient, a: str, b: str) -> Node:
    return sc.page("/episodes/compare", params={"a": a, "b": b})


def test_a_script_episode_and_its_fork_diverge_where_the_fork_played_on(sc: StudioClient, echo_url: str,
                                                                        studio_data: Path) -> None:  # fmt: skip
    from openenv.recording import fork_sync

    parent = _scripted(studio_data, echo_url, ["a", "bb", "ccc", "dddd"])
    with _store(studio_data) as store, GenericEnvClient(base_url=echo_url).sync() as client:
        forked = fork_sync(store, parent, client, step=2)
        forked.client.step({"message": "another way"})
        child = forked.report.episode_id
        store.flush()
    doc = _compare(sc, parent[:10], child[:10])  # ids by prefix
    assert "B is a fork of A at step 2" in doc.by_id("compare-summary").text()
    assert doc.by_id("compare-summary").attrs["data-divergence"] == "3"
    rows = _rows(doc)
    assert [r.attrs["data-index"] for r in rows] == ["0", "1", "2", "3", "4"]
    assert [r.attrs["data-same"] for r in rows] == ["true", "true", "true", "false", "false"]
    first = doc.by_id("cmp-step-3")
    assert "first-divergence" in first.attrs["class"] and first.by_id("first-divergence-badge") is not None
    assert set(first.attrs["data-differs"].split()) >= {"action", "observation", "reward"}
    assert "another way" in first.text() and "ccc" in first.text()
    assert rows[4].attrs["data-differs"] == "missing" and "has no step 4: it ended before" in rows[4].text()
    assert "open" not in rows[1].attrs and "open" in first.attrs  # identical steps collapsed
    ep_page = sc.page(f"/episodes/{parent}")
    assert ep_page.by_id("compare-with") is not None
    assert ep_page.find("a", class_="compare-fork").attrs["href"].endswith(f"b={child}")
    chooser = sc.page("/episodes/compare", params={"a": parent})
    assert chooser.find("li", data_episode=child) is not None  # the fork is offered


def test_two_rollouts_of_one_seed_compare_actions_and_model_calls(sc: StudioClient, echo_url: str, model_url: str,
                                                                  studio_data: Path) -> None:  # fmt: skip
    a = _rollout(studio_data, echo_url, model_url, "echo#cmp-a", "cmp-a", 3)
    b = _rollout(studio_data, echo_url, model_url, "fenced#cmp-b", "cmp-b", 2)
    doc = _compare(sc, a, b)
    assert "seed 11" in doc.by_id("compare-summary").text()
    rows = _rows(doc)
    assert rows[0].attrs["data-same"] == "true"  # the same reset
    # the fenced model wraps the same action in prose: the model call differs, the action does not
    assert rows[1].attrs["data-differs"] == "model"
    assert doc.by_id("compare-summary").attrs["data-divergence"] == "1"
    assert rows[1].find("details", class_="cmp-model") is not None and "```json" in rows[1].text()
    assert rows[3].attrs["data-differs"] == "missing"
    chooser = sc.page("/episodes/compare", params={"a": a})
    assert "same seed 11" in chooser.find("li", data_episode=b).text()


def test_studio_play_and_capture_episodes_compare(sc: StudioClient, echo_rid: str, echo_url: str,
                                                  studio_data: Path) -> None:  # fmt: skip
    resp = sc.open_play(echo_rid)
    html = resp.text
    sid = page(html).by_id("env-page").attrs["data-session"]

    def form(form_id: str, **fields: str) -> dict[str, list[str]]:
        start = html.index(f'<form id="{form_id}"')
        data = submitted(html[start:html.index("</form>", start)])
        data.update({k: [v] for k, v in fields.items()})
        return data

    data = form("reset-form", **{"r.seed": "3"})
    data.pop("r.seed.~null", None)
    r = sc.post(f"/play/s/{sid}/reset", data)
    assert r.status_code == 200, r.text[:500]
    played = fragment(r.text).by_id("play-episode").find("a").attrs["href"].rsplit("/", 1)[1]
    for m in ("a", "bb", "zz"):
        assert sc.post(f"/play/s/{sid}/step", form("step-form", **{"a.message": m})).status_code == 200
    sc.post(f"/play/s/{sid}/close", {})
    scripted = _scripted(studio_data, echo_url, ["a", "bb", "ccc"])
    doc = _compare(sc, played, scripted)
    assert "seed 3" in doc.by_id("compare-summary").text()
    assert doc.by_id("compare-summary").attrs["data-divergence"] == "3"
    assert doc.by_id("cmp-a").find("dd").text().strip() == "echo"

    from openenv.capture.recording import CaptureRecorder

    with _store(studio_data) as store:
        rec = CaptureRecorder(store, label="cap-cmp")
        eps = []
        for reply in ("done: 2", "done: 3"):
            ep = rec.open_session("s-" + reply[-1], {})
            rec.record_call(ep, {"model": "m", "reply": {"role": "assistant", "content": reply}, "completion": reply,
                                 "finish_reason": "stop", "latency_ms": 1.0,
                                 "capture": {"prompt_ids": [1, 2], "sampled_ids": [3]}}, done=True)
            rec.end_session(ep)
            eps.append(ep)
        store.flush()
    doc = _compare(sc, *eps)
    rows = _rows(doc)
    assert {r.attrs["data-index"]: r.attrs["data-same"] for r in rows} == {"0": "false", "1": "false"}
    assert "model" in rows[1].attrs["data-differs"] and "done: 3" in rows[1].text()


def test_long_observations_are_folded_and_a_long_episode_renders(sc: StudioClient, echo_url: str,
                                                                 studio_data: Path) -> None:  # fmt: skip
    import time

    long = "\n".join(f"line {i}" for i in range(40))
    a = _scripted(studio_data, echo_url, [long, *map(str, range(300))], seed=21)
    b = _scripted(studio_data, echo_url, [long + "!", *map(str, range(300))], seed=21)
    t0 = time.perf_counter()
    doc = _compare(sc, a, b)
    took = time.perf_counter() - t0
    first = doc.by_id("cmp-step-1")
    assert first.with_class("v-folded"), "a 40-line observation starts folded"
    assert first.with_class("text-diff") and "+line 39!" in first.with_class("text-diff")[0].text()
    assert len(_rows(doc)) == 302 and doc.by_id("compare-summary").attrs["data-divergence"] == "1"
    assert took < 10, f"302 aligned steps took {took:.1f}s"


def test_bad_ids_are_clear_errors(sc: StudioClient) -> None:
    assert "Choose episode A" in sc.page("/episodes/compare", status=400).text()
    assert "no episode" in sc.page("/episodes/compare", status=404, params={"a": "ffffffffffff"}).text()
    assert "hexadecimal" in sc.page("/episodes/compare", status=404, params={"a": "zz<script>"}).text()
    assert "at most 64" in sc.page("/episodes/compare", status=400, params={"a": "a" * 65}).text()
    frag = sc.fragment("/episodes/compare", status=404, params={"a": "ffffffffffff"})
    assert "no episode" in frag.text()
