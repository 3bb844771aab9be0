"""Every provider kind by name, for settings and CLIs: ``make_provider("docker")``."""

from __future__ import annotations

from typing import Any

from .base import ContainerProvider, RuntimeInfo
from .docker import LocalDockerProvider
from .errors import EngineUnavailableError, ProviderError
from .local_process import LocalProcessProvider
from .ray import RayProvider
from .runtime_provider import KubernetesProvider, RuntimeProvider
from .swarm import DockerSwarmProvider

__all__ = [
    "PROVIDERS",
    "ContainerProvider",
    "DockerSwarmProvider",
    "KubernetesProvider",
    "LocalDockerProvider",
    "LocalProcessProvider",
    "RayProvider",
    "RuntimeProvider",
    "list_all_runtimes",
    "make_provider",
]

PROVIDERS: dict[str, type[ContainerProvider]] = {
    LocalProcessProvider.kind: LocalProcessProvider,
    LocalDockerProvider.kind: LocalDockerProvider,
    DockerSwarmProvider.kind: DockerSwarmProvider,
    RayProvider.kind: RayProvider,
}


def make_provider(kind: str, **options: Any) -> ContainerProvider:
    """A new provider of ``kind`` (``process``, ``docker``, ``swarm`` or ``ray``) built with ``options``."""
    try:
        cls = PROVIDERS[kind]
    except KeyError:
        raise ProviderError(
            f"unknown provider {kind!r}; choose one of {', '.join(sorted(PROVIDERS))}"
        ) from None
    return cls(**options)


def list_all_runtimes(*, project: str | None = None, **options: Any) -> list[RuntimeInfo]:
    """What ``project`` has running under every provider kind whose backend is reachable."""
    found: list[RuntimeInfo] = []
    for cls in PROVIDERS.values():
        try:
            found.extend(cls.list_runtimes(project=project, **options))
        except EngineUnavailableError:
            continue  # no engine (no swarm, no Ray cluster) here: nothing of ours can be running there
    return found
