"""RayProvider on a real two-node Ray cluster on this machine (``ray_cluster`` fixture)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from openenv.core.containers.runtime import (
    PROVIDERS,
    PlacementError,
    ProviderError,
    RayProvider,
    RuntimeNotFoundError,
    RuntimeStatus,
    StartupError,
)
from openenv.core.errors import ConnectionLostError
from openenv.envs.echo.client import EchoEnv
from openenv.envs.echo.models import EchoAction

from .conftest import REPO

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]

OK_APP = "tests.containers.apps:ok"
SMALL = {"cpus": 0.5}


@pytest.fixture
def ray_provider(ray_cluster, project: str) -> Iterator[RayProvider]:
    provider = RayProvider(project=project, address=ray_cluster.address)
    yield provider
    provider.stop_container()
    RayProvider.cleanup(project=project, address=ray_cluster.address)
    assert RayProvider.list_runtimes(project=project, address=ray_cluster.address) == []


def _nodes(cluster) -> dict[str, str]:
    """node id -> "head" / "worker", by the custom resource each node was started with."""
    return {n["node_id"]: ("head" if "head" in n["resources"] else "worker")
            for n in RayProvider.nodes(cluster.address)}


def _episode(url: str, text: str) -> str:
    with EchoEnv(base_url=url).sync() as env:
        env.reset()
        return env.step(EchoAction(message=text)).observation.echoed_message


def test_registered_by_kind() -> None:
    assert PROVIDERS["ray"] is RayProvider


def test_envs_land_on_both_nodes_and_each_runs_an_episode(ray_provider: RayProvider, ray_cluster) -> None:
    envs = ray_provider.start_many("echo", 2, spread=True, timeout_s=90, **SMALL)
    names = _nodes(ray_cluster)
    assert sorted(names[p.node_id] for p in envs) == ["head", "worker"]
    for p in envs:
        assert p.base_url.startswith("http://127.0.0.1:")
        assert p.node_ip == "127.0.0.1"
        assert p.status() is RuntimeStatus.RUNNING
        assert _episode(p.base_url, f"hi {names[p.node_id]}") == f"hi {names[p.node_id]}"
    listed = RayProvider.list_runtimes(project=ray_provider.project, address=ray_cluster.address)
    assert sorted(i.runtime_id for i in listed) == sorted(p.runtime_id for p in envs)
    assert {i.extra["node_id"] for i in listed} == set(names)
    assert all(i.env_name == "echo" and i.status is RuntimeStatus.RUNNING for i in listed)


def test_pinned_node_module_app_env_vars_and_logs(ray_provider: RayProvider, ray_cluster) -> None:
    worker = next(k for k, v in _nodes(ray_cluster).items() if v == "worker")
    url = ray_provider.start_container(OK_APP, env_vars={"OPENENV_TEST_VALUE": "7"}, node_id=worker,
                                       cwd=str(REPO), **SMALL)
    ray_provider.wait_for_ready(url, timeout_s=60)
    assert ray_provider.node_id == worker
    assert httpx.get(f"{url}/env", params={"name": "OPENENV_TEST_VALUE"}).json() == {"value": "7"}
    assert "Uvicorn running" in ray_provider.logs(20) or "serving" in ray_provider.logs(20)


def test_killed_actor_gives_a_clear_error_and_is_replaced(ray_provider: RayProvider) -> None:
    import ray

    url = ray_provider.start_container("echo", **SMALL)
    ray_provider.wait_for_ready(url, timeout_s=60)
    with EchoEnv(base_url=url).sync() as env:
        env.reset()
        ray.kill(ray_provider._actor, no_restart=True)  # what a node loss or OOM kill does
        with pytest.raises(ConnectionLostError):
            for _ in range(200):  # the server goes down with its actor; bounded
                env.step(EchoAction(message="still there?"))
                time.sleep(0.05)
    with pytest.raises(RuntimeNotFoundError, match="is gone"):
        ray_provider.ensure_running()
    assert ray_provider.status() is RuntimeStatus.EXITED
    old = ray_provider.runtime_id
    fresh = ray_provider.replace(timeout_s=60)
    assert ray_provider.runtime_id != old
    assert _episode(fresh, "again") == "again"


def test_attach_finds_the_actor_again(ray_provider: RayProvider, ray_cluster) -> None:
    url = ray_provider.start_container("echo", detached=True, **SMALL)
    ray_provider.wait_for_ready(url, timeout_s=60)
    again = RayProvider.attach(ray_provider.runtime_id, address=ray_cluster.address)
    assert (again.base_url, again.node_id, again.detached) == (url, ray_provider.node_id, True)
    assert again.status() is RuntimeStatus.RUNNING
    again.stop_container()
    assert ray_provider.status() is RuntimeStatus.EXITED
    with pytest.raises(RuntimeNotFoundError):
        RayProvider.attach(ray_provider.runtime_id, address=ray_cluster.address)


def test_unreachable_cluster_is_a_clear_error(ray_cluster) -> None:
    """In a fresh process (this one is a driver already): a clear error, quickly, nothing started."""
    from openenv.core.containers.runtime.ports import free_port
    from openenv.core.containers.runtime.ray import connect

    with pytest.raises(ProviderError, match="already connected"):
        connect(f"127.0.0.1:{free_port()}")  # one process drives one cluster
    script = ("import sys\nfrom openenv.core.containers.runtime import RayProvider, ProviderError\n"
              "try:\n    RayProvider(address=sys.argv[1]).start_container('echo')\n"
              "except ProviderError as exc:\n    print(exc.code, exc.message)\n")
    out = subprocess.run([sys.executable, "-c", script, f"127.0.0.1:{free_port()}"], capture_output=True,
                         text=True, timeout=60, cwd=REPO)
    assert out.stdout.startswith("ENGINE_UNAVAILABLE no Ray cluster answers at 127.0.0.1:"), out.stderr[-2000:]


def test_unresolvable_target_fails_with_the_serve_message(ray_provider: RayProvider) -> None:
    with pytest.raises(StartupError) as info:
        url = ray_provider.start_container("no_such_env_anywhere", **SMALL)
        ray_provider.wait_for_ready(url, timeout_s=60)
    assert "no_such_env_anywhere" in str(info.value)
    assert ray_provider.status() is RuntimeStatus.STOPPED


def test_unsatisfiable_resources_are_refused_at_once(ray_provider: RayProvider) -> None:
    with pytest.raises(PlacementError, match="CPU=64"):
        ray_provider.start_container("echo", cpus=64)
    with pytest.raises(PlacementError, match="gpu_slot"):
        ray_provider.start_container("echo", cpus=0.5, resources={"gpu_slot": 1})
    assert ray_provider.runtime_id is None


def test_resources_taken_by_others_time_out_as_placement(ray_provider: RayProvider, ray_cluster,
                                                         project: str) -> None:
    hog = RayProvider(project=project, address=ray_cluster.address)
    url = hog.start_container("echo", cpus=0.5, resources={"worker": 1})  # the worker's only slot
    try:
        hog.wait_for_ready(url, timeout_s=60)
        started = time.monotonic()
        with pytest.raises(PlacementError, match="not placed"):
            ray_provider.start_container("echo", cpus=0.5, resources={"worker": 1}, start_timeout_s=3)
        assert time.monotonic() - started < 30  # the 3 s deadline, then the pending actor is cancelled
        left = RayProvider.list_runtimes(project=project, address=ray_cluster.address)
        assert [i.runtime_id for i in left] == [hog.runtime_id]  # the pending actor was removed
    finally:
        hog.stop_container()


def test_env_that_crashes_at_start_reports_its_log(ray_provider: RayProvider) -> None:
    with pytest.raises(StartupError, match="exited with code") as info:
        url = ray_provider.start_container("tests.containers.crash_app:app", cwd=str(REPO), **SMALL)
        ray_provider.wait_for_ready(url, timeout_s=60)
    assert "refusing to start" in str(info.value)
    assert ray_provider.status() is RuntimeStatus.STOPPED


def test_bad_options_are_refused(ray_provider: RayProvider) -> None:
    with pytest.raises(ProviderError, match="does not support: replicas"):
        ray_provider.start_container("echo", replicas=2)
    with pytest.raises(ProviderError, match="cpus must not be negative"):
        ray_provider.start_container("echo", cpus=-1)
    with pytest.raises(ProviderError, match="memory must look like"):
        ray_provider.start_container("echo", memory="lots")
    with pytest.raises(ProviderError, match="at least 1"):
        ray_provider.start_many("echo", 0)


def test_a_failed_start_many_leaves_nothing(ray_provider: RayProvider, ray_cluster) -> None:
    with pytest.raises(StartupError):
        ray_provider.start_many("tests.containers.crash_app:app", 2, cwd=str(REPO), timeout_s=60, **SMALL)
    assert RayProvider.list_runtimes(project=ray_provider.project, address=ray_cluster.address) == []


def _gone(pid: int, url: str, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            try:
                httpx.get(f"{url}/health", timeout=1.0)
            except httpx.ConnectError:
                return True
        time.sleep(0.1)
    return False


def test_nothing_of_ours_outlives_cleanup(ray_cluster, project: str) -> None:
    envs = RayProvider(project=project, address=ray_cluster.address).start_many("echo", 2, timeout_s=90, **SMALL)
    pids = {p.base_url: p._call("info")["pid"] for p in envs}
    assert RayProvider.cleanup(project=project, address=ray_cluster.address) == 2
    assert RayProvider.list_runtimes(project=project, address=ray_cluster.address) == []
    for p in envs:
        assert p.status() is RuntimeStatus.EXITED
    for url, pid in pids.items():
        assert _gone(pid, url), f"actor {pid} or its server at {url} is still there"


def _containers(project: str) -> list[str]:
    from openenv.core.containers.runtime.docker_engine import engine_client

    client = engine_client()
    try:
        found = client.containers.list(all=True, filters={"label": f"io.openenv.project=ray-{project}"})
        return [c.id for c in found]
    finally:
        client.close()


def test_docker_image_env_on_a_node_and_its_container_goes_with_the_actor(
        ray_provider: RayProvider, echo_image: str) -> None:
    import ray

    url = ray_provider.start_container(echo_image, runtime="docker", **SMALL)
    ray_provider.wait_for_ready(url, timeout_s=90)
    assert _episode(url, "from a container") == "from a container"
    assert len(_containers(ray_provider.project)) == 1
    ray.kill(ray_provider._actor, no_restart=True)  # the guard removes the container
    deadline = time.monotonic() + 30
    while _containers(ray_provider.project) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert _containers(ray_provider.project) == []


def _openenv(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "openenv.cli.main", *args], capture_output=True, text=True,
                          timeout=180, cwd=REPO)


def test_cli_starts_lists_and_stops_detached_envs(ray_cluster, project: str) -> None:
    import json

    where = ["--address", ray_cluster.address, "--project", project]
    try:
        out = _openenv("ray", "start", "echo", "-n", "2", "--cpus", "0.5", "--json", *where)
        assert out.returncode == 0, out.stderr[-2000:]
        started = [json.loads(line) for line in out.stdout.splitlines()]
        assert len({s["node_id"] for s in started}) == 2  # spread over both nodes
        for s in started:  # outlived the CLI's process: detached
            assert _episode(s["base_url"], "from the cli") == "from the cli"
        listed = _openenv("ray", "list", *where)
        assert all(s["runtime_id"] in listed.stdout for s in started), listed.stderr[-2000:]
        stopped = _openenv("ray", "stop", "--all", *where)
        assert stopped.stdout.strip() == "stopped 2", stopped.stderr[-2000:]
        bad = _openenv("ray", "start", "echo", "--cpus", "64", *where)
        assert bad.returncode == 1 and "no node of the Ray cluster can hold" in bad.stderr
    finally:
        RayProvider.cleanup(project=project, address=ray_cluster.address)
    assert RayProvider.list_runtimes(project=project, address=ray_cluster.address) == []


def test_a_non_detached_env_dies_with_its_driver(ray_cluster, project: str) -> None:
    script = ("import sys, time\nfrom openenv.core.containers.runtime import RayProvider\n"
              "p = RayProvider(address=sys.argv[1], project=sys.argv[2])\n"
              "url = p.start_container('echo', cpus=0.5)\np.wait_for_ready(url, 60)\n"
              "print(url, flush=True)\ntime.sleep(120)\n")
    driver = subprocess.Popen([sys.executable, "-c", script, ray_cluster.address, project], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = driver.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), "the driver did not start its env"
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        assert len(RayProvider.list_runtimes(project=project, address=ray_cluster.address)) == 1
    finally:
        driver.kill()  # no cleanup of its own: Ray ends what the driver owned
        driver.wait(timeout=30)
        driver.stdout.close()
    deadline = time.monotonic() + 60
    while RayProvider.list_runtimes(project=project, address=ray_cluster.address) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert RayProvider.list_runtimes(project=project, address=ray_cluster.address) == []
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/health", timeout=1.0)
        except httpx.ConnectError:
            break
        time.sleep(0.25)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/health", timeout=1.0)


def test_the_vector_client_drives_envs_on_both_nodes(ray_provider: RayProvider, ray_cluster) -> None:
    from openenv.core import VectorEnvClient

    envs = ray_provider.start_many("echo", 2, spread=True, timeout_s=90, **SMALL)
    names = _nodes(ray_cluster)
    urls = [p.base_url for p in envs]
    with VectorEnvClient(urls, num_envs=4) as vec:  # round-robin: sessions 0, 2 on one node, 1, 3 on the other
        assert vec.reset().ok
        batch = vec.step([{"message": f"m{i}"} for i in range(4)])
        assert batch.ok
        assert [o["echoed_message"] for o in batch.observations] == ["m0", "m1", "m2", "m3"]
        assert batch.rewards == [0.2] * 4
        assert [httpx.get(f"{u}/sessions", timeout=10).json()["active"] for u in urls] == [2, 2]
    assert sorted(names[p.node_id] for p in envs) == ["head", "worker"]
