"""RayProvider with a Docker-image env, on a one-node cluster in this machine's own namespace.

A Docker engine publishes container ports in the machine's network namespace, so this cluster's
node is pinned to 127.0.0.1 (``tests/ray_node.py``) rather than living in the private network the
other Ray tests use; on loopback no token is minted either.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from openenv.core.containers.runtime import RayProvider
from openenv.envs.echo.client import EchoEnv
from openenv.envs.echo.models import EchoAction
from tests._require import require
from tests.ray_cluster import LocalRayCluster, ray_available

pytestmark = [pytest.mark.ray, pytest.mark.docker]


@pytest.fixture(scope="module")
def loopback_cluster() -> Iterator[LocalRayCluster]:
    require(ray_available(), "Ray (pip install -e '.[ray]')")
    import ray

    if ray.is_initialized():
        ray.shutdown()
    with LocalRayCluster([{"num_cpus": 2}]) as cluster:
        try:
            yield cluster
        finally:
            if ray.is_initialized():
                ray.shutdown()


def _containers(project: str) -> list[str]:
    from openenv.core.containers.runtime.docker_engine import engine_client

    client = engine_client()
    try:
        found = client.containers.list(all=True, filters={"label": f"io.openenv.project=ray-{project}"})
        return [c.id for c in found]
    finally:
        client.close()


def test_docker_image_env_on_a_node_and_its_container_goes_with_the_actor(
        loopback_cluster: LocalRayCluster, project: str, echo_image: str) -> None:
    import ray

    provider = RayProvider(project=project, address=loopback_cluster.address)
    try:
        url = provider.start_container(echo_image, runtime="docker", cpus=0.5)
        provider.wait_for_ready(url, timeout_s=90)
        assert url.startswith("http://127.0.0.1:") and provider.headers(url) == {}  # loopback: no token
        with EchoEnv(base_url=url).sync() as env:
            env.reset()
            assert env.step(EchoAction(message="from a container")).observation.echoed_message == "from a container"
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
        assert len(_containers(project)) == 1
        ray.kill(provider._actor, no_restart=True)  # the guard removes the container
        deadline = time.monotonic() + 30
        while _containers(project) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert _containers(project) == []
    finally:
        RayProvider.cleanup(project=project, address=loopback_cluster.address)
