"""Runtime providers: run an environment server as a local process, a Docker container, a
Docker Swarm service or a Ray actor, wait until it is healthy, and stop it (see ``base.ContainerProvider``)."""

from __future__ import annotations

from .base import ContainerProvider, RuntimeInfo, RuntimeStatus
from .docker import LocalDockerProvider
from .errors import (
    EngineUnavailableError,
    ImageNotFoundError,
    PlacementError,
    PortInUseError,
    ProviderError,
    RuntimeNotFoundError,
    StartupError,
    StartupTimeoutError,
)
from .launch import start_client, start_client_sync
from .local_process import LocalProcessProvider
from .providers import PROVIDERS, list_all_runtimes, make_provider
from .ray import RayProvider
from .runtime_provider import KubernetesProvider, RuntimeProvider
from .swarm import DockerSwarmProvider
from .uv_provider import UVProvider

__all__ = [
    "ContainerProvider",
    "DockerSwarmProvider",
    "EngineUnavailableError",
    "ImageNotFoundError",
    "KubernetesProvider",
    "LocalDockerProvider",
    "LocalProcessProvider",
    "PROVIDERS",
    "PlacementError",
    "PortInUseError",
    "ProviderError",
    "RayProvider",
    "RuntimeInfo",
    "RuntimeNotFoundError",
    "RuntimeProvider",
    "RuntimeStatus",
    "StartupError",
    "StartupTimeoutError",
    "UVProvider",
    "list_all_runtimes",
    "make_provider",
    "start_client",
    "start_client_sync",
]
