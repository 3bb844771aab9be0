"""LocalDockerProvider against a real Docker engine."""

from __future__ import annotations

import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

import docker.errors
import httpx
import pytest

from openenv.core.containers.runtime import (
    EngineUnavailableError,
    ImageNotFoundError,
    LocalDockerProvider,
    PortInUseError,
    ProviderError,
    RuntimeNotFoundError,
    RuntimeStatus,
    StartupError,
    StartupTimeoutError,
)
from openenv.core.generic_client import GenericEnvClient

from .conftest import REPO

pytestmark = pytest.mark.docker


def _gone(container_id: str) -> bool:
    provider = LocalDockerProvider()
    try:
        provider.client.containers.get(container_id)
    except docker.errors.NotFound:
        return True
    finally:
        provider.close_client()
    return False


def test_options_are_honoured_and_published_on_loopback_only(
    docker_provider: LocalDockerProvider, echo_image: str
) -> None:
    url = docker_provider.start_container(
        echo_image,
        env_vars={"OPENENV_TEST_VALUE": "42"},
        memory="256m",
        cpus=0.5,
        pids_limit=64,
        read_only=True,
        env_name="echo",
    )
    docker_provider.wait_for_ready(url, timeout_s=60)
    container = docker_provider.client.containers.get(docker_provider.runtime_id)
    host = container.attrs["HostConfig"]
    assert host["Memory"] == 256 * 1024 * 1024
    assert host["NanoCpus"] == 500_000_000
    assert host["PidsLimit"] == 64
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert [b["HostIp"] for b in host["PortBindings"]["8000/tcp"]] == ["127.0.0.1"]
    assert "OPENENV_TEST_VALUE=42" in container.attrs["Config"]["Env"]
    assert container.labels["io.openenv.project"] == docker_provider.project
    assert container.labels["io.openenv.env"] == "echo"
    assert container.attrs["Config"]["User"] == "openenv"
    with GenericEnvClient(base_url=url).sync() as env:
        env.reset()
        assert env.step({"message": "hi"}).observation["echoed_message"] == "hi"
    assert httpx.get(f"{url}/web").status_code == 200
    assert docker_provider.status() is RuntimeStatus.RUNNING
    docker_provider.stop_container()
    docker_provider.stop_container()  # stopping twice is a no-op
    assert _gone(container.id)
    assert docker_provider.status() is RuntimeStatus.STOPPED


def test_without_network_it_is_reachable_from_this_host_only(
    docker_provider: LocalDockerProvider, echo_image: str
) -> None:
    url = docker_provider.start_container(echo_image, network=False)
    docker_provider.wait_for_ready(url, timeout_s=60)
    container = docker_provider.client.containers.get(docker_provider.runtime_id)
    (network,) = container.attrs["NetworkSettings"]["Networks"]
    assert docker_provider.client.networks.get(network).attrs["Internal"] is True
    assert container.attrs["HostConfig"]["PortBindings"] in ({}, None)
    assert httpx.get(f"{url}/health").status_code == 200
    (info,) = LocalDockerProvider.list_runtimes(project=docker_provider.project)
    assert info.base_url == url


def test_unknown_image(docker_provider: LocalDockerProvider) -> None:
    with pytest.raises(ImageNotFoundError, match="no-such-image"):
        docker_provider.start_container("openenv-no-such-image:latest")
    assert LocalDockerProvider.list_runtimes(project=docker_provider.project) == []


def test_engine_not_running_is_a_clear_error(project: str) -> None:
    provider = LocalDockerProvider(project=project, docker_host="unix:///nonexistent/docker.sock")
    with pytest.raises(EngineUnavailableError, match="Docker engine is not reachable"):
        provider.start_container("anything:latest")
    provider.stop_container()  # nothing was started: a no-op


def test_engine_not_running_from_the_cli(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from openenv.cli.main import main; main()", "build", "echo", "-q"],
        env={
            "PATH": "/usr/bin:/bin",
            "DOCKER_HOST": "unix:///nonexistent/docker.sock",
            "HOME": str(tmp_path),
        },
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Docker engine is not reachable" in done.stderr
    assert "Traceback" not in done.stderr


def test_port_already_taken(docker_provider: LocalDockerProvider, echo_image: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(PortInUseError):
            docker_provider.start_container(echo_image, port=port)
    assert LocalDockerProvider.list_runtimes(project=docker_provider.project) == []


def test_container_that_exits_at_once(docker_provider: LocalDockerProvider, base_image: str) -> None:
    with pytest.raises(StartupError, match="exited with code 0"):  # its command is a shell that ends at once
        url = docker_provider.start_container(base_image)
        docker_provider.wait_for_ready(url, timeout_s=30)
    assert _gone(docker_provider.runtime_id)


def test_container_that_never_becomes_healthy(docker_provider: LocalDockerProvider, echo_image: str) -> None:
    url = docker_provider.start_container(echo_image, container_port=9999)  # nothing listens there
    cid = docker_provider.runtime_id
    with pytest.raises(StartupTimeoutError) as err:
        docker_provider.wait_for_ready(url, timeout_s=4)
    assert "serving echo" in err.value.details["log_tail"]
    assert _gone(cid)


def test_found_again_and_attach_refuses_foreign_containers(
    docker_provider: LocalDockerProvider, echo_image: str, base_image: str
) -> None:
    url = docker_provider.start_container(echo_image)
    (info,) = LocalDockerProvider.list_runtimes(project=docker_provider.project)
    assert (info.runtime_id, info.base_url, info.provider) == (docker_provider.runtime_id, url, "docker")
    again = LocalDockerProvider.attach(info.runtime_id)
    assert (again.project, again.base_url) == (docker_provider.project, url)
    again.wait_for_ready(timeout_s=60)
    assert "serving echo" in again.logs()
    again.close_client()
    foreign = docker_provider.client.containers.create(base_image)
    try:
        with pytest.raises(RuntimeNotFoundError):
            LocalDockerProvider.attach(foreign.id)
    finally:
        foreign.remove(force=True)
    with pytest.raises(RuntimeNotFoundError):
        LocalDockerProvider.attach("0" * 64)
    with pytest.raises(ProviderError, match="does not support"):
        LocalDockerProvider().start_container(echo_image, replicas=2)


_PARENT = """
import sys, time
from openenv.core.containers.runtime import LocalDockerProvider
p = LocalDockerProvider(project=sys.argv[1])
url = p.start_container(sys.argv[2])
print(p.runtime_id, flush=True)
time.sleep(120)
"""


def test_parent_killed_then_cleanup_leaves_nothing(
    project: str, echo_image: str, docker_engine: None
) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, project, echo_image], stdout=subprocess.PIPE, cwd=REPO
    )
    try:
        ready, _, _ = select.select([parent.stdout], [], [], 60)
        assert ready, "the parent did not start its container in time"
        cid = parent.stdout.readline().decode().strip()
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        parent.stdout.close()
    (info,) = LocalDockerProvider.list_runtimes(project=project)
    assert info.runtime_id == cid
    assert LocalDockerProvider.cleanup(project=project) == 1
    assert LocalDockerProvider.list_runtimes(project=project) == []
    assert _gone(cid)
