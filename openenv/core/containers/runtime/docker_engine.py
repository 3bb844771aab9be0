"""Shared by the Docker and Swarm providers: the engine client, labels, and error translation."""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Iterator
from typing import Any

import docker.errors
import requests

import docker

from .base import LABEL_PREFIX, MANAGED_BY, ContainerProvider
from .errors import EngineUnavailableError, ImageNotFoundError, PortInUseError, ProviderError

__all__ = [
    "EngineProvider",
    "engine_client",
    "env_label",
    "is_managed",
    "label_filters",
    "managed_labels",
    "translate_docker_errors",
]

_PORT_TAKEN = re.compile(r"port is already allocated|address already in use", re.IGNORECASE)


def _explain(exc: BaseException) -> str:
    if isinstance(exc, docker.errors.APIError):
        return str(exc.explanation or exc)
    return str(exc)


@contextlib.contextmanager
def translate_docker_errors(what: str) -> Iterator[None]:
    """Turn Docker SDK and transport errors raised inside into provider errors."""
    try:
        yield
    except ProviderError:
        raise
    except docker.errors.ImageNotFound as exc:
        raise ImageNotFoundError(f"{what}: image not found ({_explain(exc)})") from exc
    except docker.errors.APIError as exc:
        text = _explain(exc)
        if _PORT_TAKEN.search(text):
            raise PortInUseError(f"{what}: {text}") from exc
        raise ProviderError(f"{what}: {text}") from exc
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise EngineUnavailableError(
            f"{what}: the Docker engine is not reachable ({exc.__class__.__name__}); "
            "is dockerd running and DOCKER_HOST right?"
        ) from exc


def _probe_unix_socket(docker_host: str | None) -> None:
    """Fail fast (and without leaking the SDK's half-open socket) when a local engine socket is dead."""
    url = docker_host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if not url.startswith("unix://"):
        return
    path = url[len("unix://") :]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        try:
            sock.connect(path)
        except OSError as exc:
            raise EngineUnavailableError(
                f"connecting to Docker: the Docker engine is not reachable at {url} ({exc.strerror or exc}); "
                "is dockerd running and DOCKER_HOST right?"
            ) from exc


def engine_client(docker_host: str | None = None, *, timeout: int = 60) -> docker.DockerClient:
    """A client for ``docker_host`` (default: ``DOCKER_HOST`` or the local socket), checked with a ping."""
    _probe_unix_socket(docker_host)
    with translate_docker_errors("connecting to Docker"):
        if docker_host:
            client = docker.DockerClient(base_url=docker_host, timeout=timeout)
        else:
            client = docker.from_env(timeout=timeout)
        client.ping()
    return client


def managed_labels(*, provider: str, project: str, env_name: str, image: str) -> dict[str, str]:
    """Labels put on everything a provider starts, so it can be listed and cleaned up later."""
    return {
        f"{LABEL_PREFIX}.managed-by": MANAGED_BY,
        f"{LABEL_PREFIX}.provider": provider,
        f"{LABEL_PREFIX}.project": project,
        f"{LABEL_PREFIX}.env": env_name,
        f"{LABEL_PREFIX}.image": image,
    }


def label_filters(*, provider: str, project: str) -> dict[str, list[str]]:
    """A Docker ``filters`` dict selecting what ``provider`` started for ``project``."""
    return {
        "label": [
            f"{LABEL_PREFIX}.managed-by={MANAGED_BY}",
            f"{LABEL_PREFIX}.provider={provider}",
            f"{LABEL_PREFIX}.project={project}",
        ]
    }


def env_label(labels: dict[str, str] | None) -> str | None:
    return (labels or {}).get(f"{LABEL_PREFIX}.env")


def is_managed(labels: dict[str, str] | None, provider: str) -> bool:
    labels = labels or {}
    return (
        labels.get(f"{LABEL_PREFIX}.managed-by") == MANAGED_BY
        and labels.get(f"{LABEL_PREFIX}.provider") == provider
    )


class EngineProvider(ContainerProvider):
    """Base of the providers that talk to a Docker engine: one lazily made client, closed on stop."""

    def __init__(self, *, project: str | None = None, docker_host: str | None = None) -> None:
        super().__init__(project=project)
        self.docker_host = docker_host
        self._client: Any = None
        self._stopped = False

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._connect()
        return self._client

    def _connect(self) -> Any:
        return engine_client(self.docker_host)

    def close_client(self) -> None:
        """Release the engine connection (a later call reconnects)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()
