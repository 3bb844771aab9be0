"""Forks on the episode page: "Fork on" offers only running envs of the episode's kind (and the
route refuses another kind), and a fork that never took a step of its own is not left behind
(deleted once its Play session ends, or when it is discarded); a fork that played on is kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from openenv.core import GenericEnvClient
from openenv.recording import EpisodeStore, record
from tests.studio.conftest import StudioClient
from tests.studio.drift_env import drift_app
from tests.studio.html import fragment
from tests.webui.formsim import submitted
from tests.webui.servers import serve


@pytest.fixture(scope="module")
def drift_rid(studio_url: str) -> Iterator[str]:
    """A drift env (another kind than echo) attached to the studio by URL."""
    import httpx

    with serve(drift_app()) as url, httpx.Client(base_url=studio_url, timeout=60, trust_env=False) as http:
        sc = StudioClient(http)
        sc.page("/envs")
        assert sc.post("/envs/attach", {"url": url}).status_code == 200
        row = sc.page("/envs").find("tr", data_name="DriftEnvironment")  # /metadata's name, as on 0.10
        assert row is not None
        yield row.attrs["data-runtime"]


def _parent(studio_data: Path, echo_url: str) -> str:
    with EpisodeStore(studio_data / "episodes.db") as store, \
            record(GenericEnvClient(base_url=echo_url).sync(), store=store, label="fork-parent") as env:
        env.reset()
        for m in ("a", "bb", "ccc"):
            env.step({"message": m})
        return env.episode_id


def _forks(studio_data: Path, parent: str) -> list:
    with EpisodeStore(studio_data / "episodes.db") as store:
        return store.list_forks(parent)


def _fork(sc: StudioClient, parent: str, rid: str, step: int = 2) -> str:
    resp = sc.post(f"/episodes/{parent}/fork", {"step": str(step), "runtime": rid})
    assert resp.status_code == 200, resp.text[:1000]
    return parse_qs(urlsplit(resp.headers["HX-Redirect"]).query)["session"][0]


def test_fork_on_offers_only_the_same_kind(sc: StudioClient, echo_rid: str, drift_rid: str, echo_url: str,
                                          studio_data: Path) -> None:  # fmt: skip
    parent = _parent(studio_data, echo_url)
    select = sc.page(f"/episodes/{parent}").by_id("fork-runtime")
    offered = {o.attrs["value"] for o in select.find_all("option")}
    assert echo_rid in offered and drift_rid not in offered
    rerun = {o.attrs["value"] for o in sc.page(f"/episodes/{parent}").by_id("rerun-runtime").find_all("option")}
    assert echo_rid in rerun and drift_rid not in rerun  # a re-run, like a fork, needs an env of the same kind
    refused = sc.post(f"/episodes/{parent}/rerun", {"runtime": drift_rid})
    assert refused.status_code == 400 and "same kind" in refused.text
    resp = sc.post(f"/episodes/{parent}/fork", {"step": "1", "runtime": drift_rid})
    assert resp.status_code == 400 and "not a echo environment" in fragment(resp.text).text()
    assert _forks(studio_data, parent) == []


def test_an_unplayed_fork_is_not_left_behind(sc: StudioClient, echo_rid: str, echo_url: str,
                                             studio_data: Path) -> None:  # fmt: skip
    parent = _parent(studio_data, echo_url)
    sid = _fork(sc, parent, echo_rid)
    (live,) = _forks(studio_data, parent)
    assert live.step_count == 2
    sc.page(f"/episodes/{parent}")
    assert [f.id for f in _forks(studio_data, parent)] == [live.id]  # its session is open: kept
    sc.post(f"/play/s/{sid}/close", {})
    doc = sc.page(f"/episodes/{parent}")
    assert _forks(studio_data, parent) == [] and "fork-children" not in {n.attrs.get("id") for n in doc.iter()}

    sid = _fork(sc, parent, echo_rid, step=1)
    resp = sc.post(f"/play/s/{sid}/fork/discard", {})
    assert "replayed steps were deleted" in resp.text and _forks(studio_data, parent) == []

    sid = _fork(sc, parent, echo_rid, step=1)
    html = sc.http.get(f"/play/{echo_rid}", params={"session": sid}).text
    start = html.index('<form id="step-form"')
    data = submitted(html[start:html.index("</form>", start)])
    data["a.message"] = ["my own step"]
    assert sc.post(f"/play/s/{sid}/step", data).status_code == 200
    sc.post(f"/play/s/{sid}/close", {})
    sc.page(f"/episodes/{parent}")
    (kept,) = _forks(studio_data, parent)
    assert kept.step_count == 2 and kept.fork_step == 1  # it played a step of its own
