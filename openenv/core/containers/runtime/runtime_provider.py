"""0.10's non-container provider contract (``RuntimeProvider``) and its Kubernetes placeholder.

``RuntimeProvider`` runs one environment somewhere that is not a container engine
(``UVProvider``: ``uv run``); ``start()`` returns the base URL, ``wait_for_ready()`` polls
``/health``, ``stop()`` ends it; it is a context manager.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .base import ContainerProvider, RuntimeInfo, RuntimeStatus
from .errors import EngineUnavailableError

__all__ = ["KubernetesProvider", "RuntimeProvider"]


class RuntimeProvider(ABC):
    """Runs one environment outside a container engine and owns it until ``stop``."""

    @abstractmethod
    def start(self, port: int | None = None, env_vars: dict[str, str] | None = None, **kwargs: Any) -> str:
        """Start the runtime; returns the base URL to connect to."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the runtime (a no-op when it is not running)."""

    @abstractmethod
    def wait_for_ready(self, timeout_s: float = 30.0) -> None:
        """Block until the runtime answers ``/health``; raises ``TimeoutError`` if it never does."""

    def __enter__(self) -> RuntimeProvider:
        self.start()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        self.stop()
        return False


_K8S_MISSING = (
    "KubernetesProvider is a placeholder, as in openenv 0.10: there is no Kubernetes backend yet "
    "(it would need a cluster, a kubeconfig and the 'kubernetes' client package). Use "
    "LocalProcessProvider, LocalDockerProvider, DockerSwarmProvider or RayProvider instead."
)


class KubernetesProvider(ContainerProvider):
    """Placeholder for a Kubernetes backend (0.10 names it, "coming soon"): it can be imported
    and built, and every operation raises :class:`EngineUnavailableError` saying what is missing."""

    kind = "kubernetes"

    def start_container(self, image: str, port: int | None = None, env_vars: dict[str, str] | None = None,
                        **kwargs: Any) -> str:
        raise EngineUnavailableError(_K8S_MISSING)

    def stop_container(self) -> None:
        """Nothing was started: a no-op."""

    def status(self) -> RuntimeStatus:
        raise EngineUnavailableError(_K8S_MISSING)

    def logs(self, tail: int = 100) -> str:
        raise EngineUnavailableError(_K8S_MISSING)

    @classmethod
    def list_runtimes(cls, *, project: str | None = None, **kwargs: Any) -> list[RuntimeInfo]:
        raise EngineUnavailableError(_K8S_MISSING)

    @classmethod
    def attach(cls, runtime_id: str, **kwargs: Any) -> ContainerProvider:
        raise EngineUnavailableError(_K8S_MISSING)
