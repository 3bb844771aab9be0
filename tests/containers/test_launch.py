"""Starting a client from a provider: the client owns what it started; failures leave nothing."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from openenv.core.containers.runtime import (
    ImageNotFoundError,
    LocalDockerProvider,
    LocalProcessProvider,
    ProviderError,
    RuntimeStatus,
    StartupError,
    list_all_runtimes,
    make_provider,
    start_client,
    start_client_sync,
)
from openenv.envs.echo.client import EchoEnv
from openenv.envs.echo.models import EchoAction

from .conftest import REPO


def test_from_docker_image_closes_its_container(project: str, echo_image: str, docker_engine: None) -> None:
    provider = LocalDockerProvider(project=project)

    async def run() -> str:
        client = await EchoEnv.from_docker_image(echo_image, provider=provider)
        async with client:
            await client.reset()
            result = await client.step(EchoAction(message="boxed"))
        return result.observation.echoed_message

    assert asyncio.run(run()) == "boxed"
    assert provider.status() is RuntimeStatus.STOPPED
    assert LocalDockerProvider.list_runtimes(project=project) == []


def test_failed_docker_start_leaves_nothing(project: str, docker_engine: None) -> None:
    provider = LocalDockerProvider(project=project)
    with pytest.raises(ImageNotFoundError):
        asyncio.run(EchoEnv.from_docker_image("openenv-no-such-image:latest", provider=provider))
    assert LocalDockerProvider.list_runtimes(project=project) == []


def test_failed_process_start_leaves_nothing(project: str, data_dir: Path) -> None:
    provider = LocalProcessProvider(project=project, data_dir=data_dir)
    with pytest.raises(StartupError):
        asyncio.run(start_client(EchoEnv, "tests.containers.crash_app:app", provider=provider, cwd=REPO))
    assert provider.status() is RuntimeStatus.STOPPED
    assert LocalProcessProvider.list_runtimes(project=project, data_dir=data_dir) == []


def test_cancelled_start_leaves_nothing(project: str, data_dir: Path) -> None:
    provider = LocalProcessProvider(project=project, data_dir=data_dir)

    async def impatient() -> None:
        await asyncio.wait_for(start_client(EchoEnv, "echo", provider=provider, timeout_s=30), timeout=0.05)

    with pytest.raises(TimeoutError):
        asyncio.run(impatient())
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:  # the start goes on in its thread, then is undone
        if provider.runtime_id is not None and provider.status() is RuntimeStatus.STOPPED:
            break
        time.sleep(0.1)
    assert provider.status() is RuntimeStatus.STOPPED
    assert LocalProcessProvider.list_runtimes(project=project, data_dir=data_dir) == []


def test_sync_start_with_the_process_provider(project: str, data_dir: Path) -> None:
    provider = LocalProcessProvider(project=project, data_dir=data_dir)
    with start_client_sync(EchoEnv, "echo", provider=provider, timeout_s=30) as env:
        env.reset()
        assert env.step(EchoAction(message="sync")).observation.echoed_message == "sync"
        assert provider.status() is RuntimeStatus.RUNNING
    assert provider.status() is RuntimeStatus.STOPPED
    assert LocalProcessProvider.list_runtimes(project=project, data_dir=data_dir) == []


def test_runtimes_of_every_kind_are_listed(project: str, data_dir: Path, echo_image: str) -> None:
    process = LocalProcessProvider(project=project, data_dir=data_dir)
    docker = LocalDockerProvider(project=project)
    try:
        process.start_container("echo")
        docker.start_container(echo_image)
        found = list_all_runtimes(project=project, data_dir=data_dir)
        assert sorted(info.provider for info in found) == ["docker", "process"]
    finally:
        process.stop_container()
        docker.stop_container()


def test_provider_by_name() -> None:
    assert isinstance(make_provider("process", project="p"), LocalProcessProvider)
    with pytest.raises(ProviderError, match="unknown provider 'kubernetes'"):
        make_provider("kubernetes")


def test_from_docker_image_sync_with_the_process_provider(project: str) -> None:
    provider = LocalProcessProvider(project=project)
    with EchoEnv.from_docker_image_sync("echo", provider=provider) as env:
        env.reset()
        assert env.step(EchoAction(message="sync")).observation.echoed_message == "sync"
        assert provider.status() is RuntimeStatus.RUNNING
    assert provider.status() is not RuntimeStatus.RUNNING
