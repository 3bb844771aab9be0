"""Fixtures for provider tests: a per-test project (cleaned up after), the engine, the echo image."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.core.containers.runtime import (
    DockerSwarmProvider,
    LocalDockerProvider,
    LocalProcessProvider,
    ProviderError,
)
from openenv.core.containers.runtime.docker_engine import engine_client
from tests._require import require

REPO = Path(__file__).resolve().parents[2]
BASE_IMAGE = os.environ.get("OPENENV_BASE_IMAGE", "openenv-base:bookworm")
ECHO_TAG = "openenv-echo:test"


def _engine() -> tuple[bool, bool, bool]:
    """(engine reachable, swarm active, base image present)."""
    try:
        client = engine_client()
    except ProviderError:
        return False, False, False
    try:
        swarm = client.info().get("Swarm", {}).get("LocalNodeState") == "active"
        base = bool(client.images.list(name=BASE_IMAGE))
    finally:
        client.close()
    return True, swarm, base


_ENGINE = _engine()


@pytest.fixture
def project() -> str:
    """A project name of its own, so listings and cleanup see only this test's runtimes."""
    return f"test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "runtimes"


@pytest.fixture
def process_provider(project: str, data_dir: Path) -> Iterator[LocalProcessProvider]:
    provider = LocalProcessProvider(project=project, data_dir=data_dir)
    yield provider
    provider.stop_container()
    LocalProcessProvider.cleanup(project=project, data_dir=data_dir)


@pytest.fixture
def docker_engine() -> None:
    require(_ENGINE[0], "a running Docker engine (scripts/system/10-docker.sh)")


@pytest.fixture
def docker_provider(docker_engine: None, project: str) -> Iterator[LocalDockerProvider]:
    provider = LocalDockerProvider(project=project)
    yield provider
    provider.stop_container()
    LocalDockerProvider.cleanup(project=project)


@pytest.fixture
def swarm_provider(docker_engine: None, project: str) -> Iterator[DockerSwarmProvider]:
    require(_ENGINE[1], "an active Docker swarm (scripts/system/10-docker.sh)")
    provider = DockerSwarmProvider(project=project)
    yield provider
    provider.stop_container()
    DockerSwarmProvider.cleanup(project=project)


@pytest.fixture(scope="session")
def base_image() -> str:
    require(_ENGINE[0], "a running Docker engine (scripts/system/10-docker.sh)")
    require(_ENGINE[2], f"the local base image {BASE_IMAGE} (scripts/system/20-base-image.sh)")
    return BASE_IMAGE


@pytest.fixture(scope="session")
def echo_image(base_image: str) -> str:
    """The echo env image, built once per session from a host wheelhouse (skipped when up to date)."""
    from openenv.core.containers.images import build_env_image

    return build_env_image("echo", tag=ECHO_TAG, base_image=base_image, offline=True)

