"""Docker and Swarm through the studio's routes: catalogue images, launch, re-adoption, stop."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openenv.core.containers.runtime import DockerSwarmProvider, LocalDockerProvider
from tests._require import require
from tests.containers.conftest import _ENGINE
from tests.studio.conftest import StudioClient, make_settings, running_studio
from tests.studio.html import fragment

pytestmark = pytest.mark.docker


@pytest.fixture()
def project() -> Iterator[str]:
    name = f"studio-{uuid.uuid4().hex[:8]}"
    yield name
    LocalDockerProvider.cleanup(project=name)
    if _ENGINE[1]:
        DockerSwarmProvider.cleanup(project=name)


def _client(url: str) -> StudioClient:
    sc = StudioClient(httpx.Client(base_url=url, timeout=60.0, trust_env=False))
    sc.page("/envs")
    return sc


def _launch(sc: StudioClient, image: str, provider: str, **options: str) -> str:
    resp = sc.post(f"/envs/launch/{sc.entry_key(image)}", {"provider": provider, **options})
    assert resp.status_code == 200, resp.text
    rid = fragment(resp.text).find("div").attrs["data-runtime"]
    node = sc.wait_launch(rid).find("div")
    assert node.attrs["data-status"] == "running", node.text()
    return rid


def _play_one_step(sc: StudioClient, rid: str, message: str) -> None:
    html = sc.open_play(rid).text
    sid = html.split('data-session="', 1)[1].split('"', 1)[0]
    assert sc.post(f"/play/s/{sid}/reset", {"mode": "form"}).status_code == 200
    resp = sc.post(f"/play/s/{sid}/step", {"a.message": message})
    assert resp.status_code == 200 and message in fragment(resp.text).by_id("observation").text()
    sc.post(f"/play/s/{sid}/close")


def test_docker_launch_readopt_stop(tmp_path: Path, echo_image: str, project: str) -> None:
    settings = make_settings(tmp_path, project=project, docker=True)
    with running_studio(settings, cleanup=False) as url:
        sc = _client(url)
        row = sc.page("/envs").find("tr", data_target=echo_image)
        assert "docker" in row.text() and "image" in row.text()
        rid = _launch(sc, echo_image, "docker", memory="300m")
        _play_one_step(sc, rid, "in a container")
        sc.http.close()
    (info,) = LocalDockerProvider.list_runtimes(project=project)
    with running_studio(settings) as url:
        sc = _client(url)
        row = sc.fragment("/envs/running").find("tr", data_runtime=rid)  # the same id after a restart
        assert row.attrs["data-status"] == "running" and "re-adopted" in row.text()
        _play_one_step(sc, rid, "after a restart")
        assert sc.post(f"/envs/r/{rid}/stop", **{"HX-Target": "running"}).status_code == 200
        sc.http.close()
    assert LocalDockerProvider.list_runtimes(project=project) == []


def test_swarm_launch_and_stop(tmp_path: Path, echo_image: str, project: str) -> None:
    require(_ENGINE[1], "an active Docker swarm (scripts/system/10-docker.sh)")
    with running_studio(make_settings(tmp_path, project=project, docker=True)) as url:
        sc = _client(url)
        form = sc.fragment(f"/envs/launch/{sc.entry_key(echo_image)}", params={"provider": "swarm"})
        assert form.find("input", name="replicas") is not None and form.find("input", name="port") is None
        rid = _launch(sc, echo_image, "swarm", replicas="1", memory="300m")
        _play_one_step(sc, rid, "in a swarm")
        assert len(DockerSwarmProvider.list_runtimes(project=project)) == 1
        assert sc.post(f"/envs/r/{rid}/stop", **{"HX-Target": "running"}).status_code == 200
        sc.http.close()
    assert DockerSwarmProvider.list_runtimes(project=project) == []


def test_isolated_docker_env_is_played_over_its_bridge(tmp_path: Path, echo_image: str, project: str) -> None:
    with running_studio(make_settings(tmp_path, project=project, docker=True)) as url:
        sc = _client(url)
        rid = _launch(sc, echo_image, "docker", isolated="on")
        row = sc.fragment("/envs/running").find("tr", data_runtime=rid)
        assert "127.0.0.1" not in row.with_class("url-cell")[0].text()  # no published port
        _play_one_step(sc, rid, "no way out")
        assert sc.post(f"/envs/r/{rid}/stop", **{"HX-Target": "running"}).status_code == 200
        sc.http.close()
