"""Ray through the studio's routes: offered when the cluster answers, launch on a node, play, re-adopt, stop."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openenv.core.containers.runtime import RayProvider
from tests.studio.conftest import StudioClient, make_settings, running_studio
from tests.studio.html import fragment

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]  # in the cluster's network


@pytest.fixture()
def project(ray_cluster) -> Iterator[str]:
    name = f"studio-{uuid.uuid4().hex[:8]}"
    yield name
    RayProvider.cleanup(project=name, address=ray_cluster.address)


def _client(url: str) -> StudioClient:
    sc = StudioClient(httpx.Client(base_url=url, timeout=60.0, trust_env=False))
    sc.page("/envs")
    return sc


def _play_one_step(sc: StudioClient, rid: str, message: str) -> None:
    html = sc.open_play(rid).text
    sid = html.split('data-session="', 1)[1].split('"', 1)[0]
    assert sc.post(f"/play/s/{sid}/reset", {"mode": "form"}).status_code == 200
    resp = sc.post(f"/play/s/{sid}/step", {"a.message": message})
    assert resp.status_code == 200 and message in fragment(resp.text).by_id("observation").text()
    sc.post(f"/play/s/{sid}/close")


def test_without_an_address_ray_is_absent_with_the_reason(tmp_path: Path) -> None:
    with running_studio(make_settings(tmp_path)) as url:
        sc = _client(url)
        notice = sc.page("/envs").with_class("ray-off")
        assert notice and "OPENENV_STUDIO_RAY_ADDRESS" in notice[0].text()
        form = sc.fragment(f"/envs/launch/{sc.entry_key('echo')}")
        assert "ray" not in [o.text() for o in form.find_all("option")]
        resp = sc.post(f"/envs/launch/{sc.entry_key('echo')}", {"provider": "ray"})
        assert resp.status_code == 422 and "choose one of: process" in resp.text
        sc.http.close()


def test_launch_on_the_cluster_play_readopt_and_stop(tmp_path: Path, ray_cluster, project: str) -> None:
    settings = make_settings(tmp_path, project=project, ray_address=ray_cluster.address)
    nodes = {n["node_id"][:8] for n in RayProvider.nodes(ray_cluster.address)}
    with running_studio(settings, cleanup=False) as url:
        sc = _client(url)
        assert "2 nodes" in sc.page("/envs").with_class("ray-on")[0].text()
        form = sc.fragment(f"/envs/launch/{sc.entry_key('echo')}", params={"provider": "ray"})
        assert form.find("input", name="cpus") is not None and form.find("input", name="port") is None
        resp = sc.post(f"/envs/launch/{sc.entry_key('echo')}", {"provider": "ray", "cpus": "0.5"})
        assert resp.status_code == 200, resp.text
        rid = fragment(resp.text).find("div").attrs["data-runtime"]
        node = sc.wait_launch(rid).find("div")
        assert node.attrs["data-status"] == "running", node.text()
        row = sc.fragment("/envs/running").find("tr", data_runtime=rid)
        placement = row.with_class("placement")[0].text()
        assert placement.split()[1] in nodes and ray_cluster.host in placement
        (env,) = RayProvider.list_runtimes(project=project, address=ray_cluster.address)
        token = RayProvider.attach(env.runtime_id, address=ray_cluster.address).headers()["Authorization"][7:]
        assert httpx.post(f"{env.base_url}/reset", json={}, timeout=10).status_code == 401  # guarded
        _play_one_step(sc, rid, "on a ray node")  # the studio carries the token minted for the env
        shown = [sc.http.get(p).text for p in ("/envs", "/envs/running", f"/envs/r/{rid}", f"/envs/r/{rid}/logs",
                                                "/episodes", "/sessions")]
        assert all(token not in page for page in shown)
        sc.http.close()
    (info,) = RayProvider.list_runtimes(project=project, address=ray_cluster.address)  # detached: still there
    with running_studio(settings) as url:
        sc = _client(url)
        row = sc.fragment("/envs/running").find("tr", data_runtime=rid)  # the same id after a restart
        assert row.attrs["data-status"] == "running" and "re-adopted" in row.text()
        assert row.with_class("placement")[0].text() == placement
        _play_one_step(sc, rid, "after a restart")
        assert sc.post(f"/envs/r/{rid}/stop", **{"HX-Target": "running"}).status_code == 200
        sc.http.close()
    assert RayProvider.list_runtimes(project=project, address=ray_cluster.address) == []
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert b"on a ray node" in stored and token.encode() not in stored  # recorded; the token is not


def test_without_ray_installed_the_reason_is_given() -> None:
    """In a fresh process where ``import ray`` fails (this one is a Ray driver already)."""
    import subprocess
    import sys

    script = ("import sys\nsys.modules['ray'] = None  # as if Ray were not installed\n"
              "from openenv.core.containers.runtime import EngineUnavailableError, RayProvider\n"
              "from webui.studio.ray_status import probe_ray\n"
              "print(probe_ray('127.0.0.1:6379').reason)\n"
              "try:\n    RayProvider(address='127.0.0.1:6379').start_container('echo')\n"
              "except EngineUnavailableError as exc:\n    print(exc.code, exc.message)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.splitlines() == [
        "Ray is not installed (pip install 'ray[default]').",
        "ENGINE_UNAVAILABLE Ray is not installed (pip install 'ray[default]')",
    ], out.stderr[-2000:]
