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
from openenv.core.errors import AuthenticationError, ConnectionLostError
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


def _episode(url: str, text: str, headers: dict[str, str]) -> str:
    with EchoEnv(base_url=url, headers=headers).sync() as env:
        env.reset()
        return env.step(EchoAction(message=text)).observation.echoed_message


def test_registered_by_kind() -> None:
    assert PROVIDERS["ray"] is RayProvider


def test_envs_land_on_both_nodes_and_each_runs_an_episode(ray_provider: RayProvider, ray_cluster) -> None:
    envs = ray_provider.start_many("echo", 2, spread=True, timeout_s=90, **SMALL)
    names = _nodes(ray_cluster)
    assert sorted(names[p.node_id] for p in envs) == ["head", "worker"]
    for p in envs:  # at the node's routable address, as on a real network
        assert p.base_url.startswith(f"http://{ray_cluster.host}:") and ray_cluster.host != "127.0.0.1"
        assert p.node_ip == ray_cluster.host
        assert p.status() is RuntimeStatus.RUNNING
        assert _episode(p.base_url, f"hi {names[p.node_id]}", p.headers(p.base_url)) == f"hi {names[p.node_id]}"
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
    got = httpx.get(f"{url}/env", params={"name": "OPENENV_TEST_VALUE"}, headers=ray_provider.headers(url))
    assert got.json() == {"value": "7"}
    assert "Uvicorn running" in ray_provider.logs(20) or "serving" in ray_provider.logs(20)


def test_killed_actor_gives_a_clear_error_and_is_replaced(ray_provider: RayProvider) -> None:
    import ray

    url = ray_provider.start_container("echo", **SMALL)
    ray_provider.wait_for_ready(url, timeout_s=60)
    with EchoEnv(base_url=url, headers=ray_provider.headers(url)).sync() as env:
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
    assert _episode(fresh, "again", ray_provider.headers(fresh)) == "again"


def test_attach_finds_the_actor_again(ray_provider: RayProvider, ray_cluster) -> None:
    url = ray_provider.start_container("echo", detached=True, **SMALL)
    ray_provider.wait_for_ready(url, timeout_s=60)
    again = RayProvider.attach(ray_provider.runtime_id, address=ray_cluster.address)
    assert (again.base_url, again.node_id, again.detached) == (url, ray_provider.node_id, True)
    assert again.headers(url) == ray_provider.headers(url) != {}  # the token comes back with it
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
        for s in started:  # outlived the CLI's process: detached; the token only from `openenv ray token`
            assert s["token_required"] is True and "token" not in s
            token = _openenv("ray", "token", s["runtime_id"], "--address", ray_cluster.address).stdout.strip()
            assert token and token not in out.stdout
            assert httpx.post(f"{s['base_url']}/reset", json={}, timeout=10).status_code == 401
            assert _episode(s["base_url"], "from the cli", {"Authorization": f"Bearer {token}"}) == "from the cli"
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
        assert url.startswith(f"http://{ray_cluster.host}:"), "the driver did not start its env"
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
    with VectorEnvClient.from_providers(envs, num_envs=4) as vec:  # round-robin: sessions 0, 2 on one node, 1, 3 on the other
        assert vec.reset().ok
        batch = vec.step([{"message": f"m{i}"} for i in range(4)])
        assert batch.ok
        assert [o["echoed_message"] for o in batch.observations] == ["m0", "m1", "m2", "m3"]
        assert batch.rewards == [0.2] * 4
        assert [httpx.get(f"{u}/sessions", timeout=10, headers=p.headers(u)).json()["active"]
                for u, p in zip(urls, envs, strict=True)] == [2, 2]
    assert sorted(names[p.node_id] for p in envs) == ["head", "worker"]


def test_a_routable_node_serves_only_with_the_token_minted_for_each_env(ray_provider: RayProvider, ray_cluster) -> None:
    """The issue's case: no token set by hand, four envs, nothing reaches a server without its token."""
    import json

    envs = ray_provider.start_many("echo", 4, timeout_s=120, **SMALL)
    tokens = []
    for p in envs:
        headers = p.headers(p.base_url)
        assert list(headers) == ["Authorization"] and headers["Authorization"].startswith("Bearer ")
        tokens.append(headers["Authorization"].removeprefix("Bearer "))
        assert "token" not in p.base_url
        assert httpx.get(f"{p.base_url}/health", timeout=10).status_code == 200  # open, as on every server
        assert httpx.post(f"{p.base_url}/reset", json={}, timeout=10).status_code == 401
        wrong = httpx.post(f"{p.base_url}/reset", json={}, timeout=10, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json()["code"] == "UNAUTHORIZED"
        assert httpx.post(f"{p.base_url}/reset", json={}, headers=headers, timeout=10).status_code == 200
    assert len(set(tokens)) == 4 and all(len(t) >= 32 for t in tokens)  # one per env
    with pytest.raises(AuthenticationError, match="requires a bearer token and none was sent"):
        with EchoEnv(base_url=envs[0].base_url).sync() as env:
            env.reset()  # a WebSocket client without the token is turned away too, at once
    with EchoEnv(base_url=envs[0].base_url, headers=envs[0].headers()).sync() as env:
        assert env.reset().observation.echoed_message is not None
    # never in what is listed, shown or logged about the env
    listed = RayProvider.list_runtimes(project=ray_provider.project, address=ray_cluster.address)
    told = repr(listed) + json.dumps(envs[0]._call("info")) + "".join(p.logs(200) for p in envs)
    assert not any(t in told for t in tokens)


def test_start_client_sends_the_token(ray_cluster, project: str) -> None:
    from openenv.core.containers.runtime.launch import start_client_sync

    provider = RayProvider(project=project, address=ray_cluster.address)
    try:
        with start_client_sync(EchoEnv, "echo", provider=provider, timeout_s=90, **SMALL) as env:
            assert provider.headers() != {}
            env.reset()
            assert env.step(EchoAction(message="carried")).observation.echoed_message == "carried"
    finally:
        RayProvider.cleanup(project=project, address=ray_cluster.address)


def test_a_given_token_is_used_and_a_docker_image_on_a_routable_node_is_refused(ray_provider: RayProvider) -> None:
    url = ray_provider.start_container("echo", token="given-token-0123456789", **SMALL)
    ray_provider.wait_for_ready(url, timeout_s=60)
    assert ray_provider.headers(url) == {"Authorization": "Bearer given-token-0123456789"}
    assert httpx.post(f"{url}/reset", json={}, headers={"X-OpenEnv-Token": "given-token-0123456789"}).status_code == 200
    ray_provider.stop_container()
    with pytest.raises(StartupError, match="publishes on the node's loopback only"):
        url = ray_provider.start_container("openenv-echo:latest", runtime="docker", **SMALL)
        ray_provider.wait_for_ready(url, timeout_s=60)


def test_auto_env_on_ray_sends_the_token(ray_cluster, project: str) -> None:
    from openenv.auto import AutoEnv

    provider = RayProvider(project=project, address=ray_cluster.address)
    try:
        with AutoEnv.from_env("echo", provider=provider).sync() as env:
            env.reset()
            assert env.step(EchoAction(message="auto")).observation.echoed_message == "auto"
        assert provider.headers() != {}
    finally:
        RayProvider.cleanup(project=project, address=ray_cluster.address)
