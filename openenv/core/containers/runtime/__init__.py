"""Runtime providers: run an environment server as a local process, a Docker container or a
Docker Swarm service, wait until it is healthy, and stop it (see ``base.ContainerProvider``)."""

from __future__ import annotations

from .base import ContainerProvider, RuntimeInfo, RuntimeStatus
from .docker import LocalDockerProvider
from .errors import (
    EngineUnavailableError,
    ImageNotFoundError,
    PortInUseError,
    ProviderError,
    RuntimeNotFoundError,
    StartupError,
    StartupTimeoutError,
)
from .local_process import LocalProcessProvider

__all__ = [
    "ContainerProvider",
    "EngineUnavailableError",
    "ImageNotFoundError",
    "LocalDockerProvider",
    "LocalProcessProvider",
    "PortInUseError",
    "ProviderError",
    "RuntimeInfo",
    "RuntimeNotFoundError",
    "RuntimeStatus",
    "StartupError",
    "StartupTimeoutError",
]
