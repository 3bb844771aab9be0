"""DockerSwarmProvider on a real one-node swarm."""

from __future__ import annotations

import pytest

from openenv.core.containers.runtime import (
    DockerSwarmProvider,
    ImageNotFoundError,
    ProviderError,
    RuntimeNotFoundError,
    RuntimeStatus,
    StartupError,
    StartupTimeoutError,
)
from openenv.core.generic_client import GenericEnvClient

pytestmark = [pytest.mark.docker, pytest.mark.swarm]


def _service_containers(provider: DockerSwarmProvider, service_id: str) -> list:
    return provider.client.containers.list(
        all=True, filters={"label": f"com.docker.swarm.service.id={service_id}"}
    )


def test_replicas_with_limits_scale_and_clean_removal(
    swarm_provider: DockerSwarmProvider, echo_image: str
) -> None:
    swarm_provider.start_container(
        echo_image, replicas=2, memory="256m", cpus=0.5, pids_limit=64, read_only=True
    )
    swarm_provider.wait_for_ready(timeout_s=90)
    assert len(swarm_provider.base_urls) == 2
    assert swarm_provider.status() is RuntimeStatus.RUNNING
    spec = swarm_provider.client.services.get(swarm_provider.runtime_id).attrs["Spec"]
    limits = spec["TaskTemplate"]["Resources"]["Limits"]
    assert (limits["MemoryBytes"], limits["NanoCPUs"], limits["Pids"]) == (256 * 1024 * 1024, 500_000_000, 64)
    assert spec["TaskTemplate"]["ContainerSpec"]["ReadOnly"] is True
    assert spec["Labels"]["io.openenv.project"] == swarm_provider.project
    assert "Ports" not in spec.get("EndpointSpec", {})  # nothing published on the node's interfaces
    for url in swarm_provider.base_urls:
        with GenericEnvClient(base_url=url).sync() as env:
            env.reset()
            assert env.step({"message": url}).observation["echoed_message"] == url

    (info,) = DockerSwarmProvider.list_runtimes(project=swarm_provider.project)
    assert (info.runtime_id, info.extra["replicas"]) == (swarm_provider.runtime_id, 2)
    again = DockerSwarmProvider.attach(info.runtime_id)
    try:
        assert (again.project, again.base_urls) == (swarm_provider.project, swarm_provider.base_urls)
    finally:
        again.close_client()
    with pytest.raises(RuntimeNotFoundError):
        DockerSwarmProvider.attach("no-such-service")
    assert len(swarm_provider.scale(1, timeout_s=90)) == 1

    service_id = swarm_provider.runtime_id
    swarm_provider.stop_container()
    swarm_provider.stop_container()  # stopping twice is a no-op
    assert swarm_provider.status() is RuntimeStatus.STOPPED
    assert DockerSwarmProvider.list_runtimes(project=swarm_provider.project) == []
    probe = DockerSwarmProvider()
    try:
        assert _service_containers(probe, service_id) == []
    finally:
        probe.close_client()


def test_unknown_image(swarm_provider: DockerSwarmProvider) -> None:
    with pytest.raises(ImageNotFoundError):
        swarm_provider.start_container("openenv-no-such-image:latest")
    assert DockerSwarmProvider.list_runtimes(project=swarm_provider.project) == []


def test_replica_that_exits_at_once(swarm_provider: DockerSwarmProvider, base_image: str) -> None:
    with pytest.raises(StartupError, match="stopped while starting"):
        swarm_provider.start_container(base_image, start_timeout_s=60)
    assert DockerSwarmProvider.list_runtimes(project=swarm_provider.project) == []


def test_replica_that_never_becomes_healthy(swarm_provider: DockerSwarmProvider, echo_image: str) -> None:
    swarm_provider.start_container(echo_image, container_port=9999)  # nothing listens there
    with pytest.raises(StartupTimeoutError):
        swarm_provider.wait_for_ready(timeout_s=6)
    assert DockerSwarmProvider.list_runtimes(project=swarm_provider.project) == []


def test_bad_requests_are_refused(swarm_provider: DockerSwarmProvider, echo_image: str) -> None:
    with pytest.raises(ProviderError, match="no port is published"):
        swarm_provider.start_container(echo_image, port=8080)
    with pytest.raises(ProviderError, match="at least 1"):
        swarm_provider.start_container(echo_image, replicas=0)
    with pytest.raises(ProviderError, match="nothing is running"):
        swarm_provider.scale(2)


def test_without_network_replicas_sit_on_an_internal_network(
    swarm_provider: DockerSwarmProvider, echo_image: str
) -> None:
    swarm_provider.start_container(echo_image, network=False)
    swarm_provider.wait_for_ready(timeout_s=60)
    spec = swarm_provider.client.services.get(swarm_provider.runtime_id).attrs["Spec"]
    (attachment,) = spec["TaskTemplate"]["Networks"]
    assert swarm_provider.client.networks.get(attachment["Target"]).attrs["Internal"] is True
    with GenericEnvClient(base_url=swarm_provider.base_url).sync() as env:
        env.reset()
        assert env.step({"message": "inside"}).observation["echoed_message"] == "inside"
