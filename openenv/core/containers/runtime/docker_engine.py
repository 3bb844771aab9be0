"""Shared by the Docker and Swarm providers: the engine client, labels, error translation and
the lifecycle written once around per-kind hooks (``EngineProvider``)."""

from __future__ import annotations

import contextlib
import os
import re
import socket
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any

import docker.errors
import requests

import docker

from .base import LABEL_PREFIX, MANAGED_BY, ContainerProvider, RuntimeInfo, RuntimeStatus
from .errors import (
    EngineUnavailableError,
    ImageNotFoundError,
    PortInUseError,
    ProviderError,
    RuntimeNotFoundError,
)

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
    """Base of the providers that talk to a Docker engine.

    It owns one lazily made client (closed on stop) and one handle (a container or a service,
    anything with ``id``, ``name``, ``reload()``); status, logs, stop, listing and attaching are
    written once here around small per-kind hooks.
    """

    def __init__(self, *, project: str | None = None, docker_host: str | None = None) -> None:
        super().__init__(project=project)
        self.docker_host = docker_host
        self._client: Any = None
        self._handle: Any = None
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

    # -- per-kind hooks -------------------------------------------------------------------

    @abstractmethod
    def _live_status(self) -> RuntimeStatus:
        """Status of the (freshly reloaded) handle."""

    @abstractmethod
    def _read_logs(self, tail: int) -> str: ...

    @abstractmethod
    def _remove(self) -> None:
        """Stop and remove the handle and everything it runs."""

    @abstractmethod
    def _list_managed(self) -> list[Any]:
        """Handles labelled as this kind's, for ``self.project``."""

    @abstractmethod
    def _get(self, runtime_id: str) -> Any: ...

    @staticmethod
    @abstractmethod
    def _labels_of(handle: Any) -> dict[str, str]: ...

    @abstractmethod
    def _info(self, handle: Any) -> RuntimeInfo: ...

    def _adopt(self, handle: Any) -> None:
        """Take over an existing handle (``attach``); subclasses restore what they need from it."""
        self._handle = handle
        self.runtime_id = handle.id
        self.project = self._labels_of(handle).get(f"{LABEL_PREFIX}.project", self.project)

    # -- the shared contract --------------------------------------------------------------

    def status(self) -> RuntimeStatus:
        if self._stopped:
            return RuntimeStatus.STOPPED
        if self._handle is None:
            raise ProviderError("nothing started yet")
        with translate_docker_errors(f"reading the status of {self._handle.name}"):
            try:
                self._handle.reload()
            except docker.errors.NotFound:
                return RuntimeStatus.STOPPED
        return self._live_status()

    def logs(self, tail: int = 100) -> str:
        if self._handle is None or self._stopped:
            return ""
        with translate_docker_errors(f"reading the logs of {self._handle.name}"):
            try:
                return self._read_logs(tail)
            except docker.errors.NotFound:
                return ""

    def stop_container(self) -> None:
        """Stop and remove what was started; a second call (or a gone runtime) is a no-op."""
        if not self._stopped and self._handle is not None:
            with translate_docker_errors(f"removing {self._handle.name}"):
                try:
                    self._remove()
                except docker.errors.NotFound:
                    pass
            self._stopped = True
        self.close_client()

    @classmethod
    def list_runtimes(
        cls, *, project: str | None = None, docker_host: str | None = None, **kwargs: Any
    ) -> list[RuntimeInfo]:
        probe = cls(project=project, docker_host=docker_host)
        try:
            with translate_docker_errors(f"listing {cls.kind} runtimes"):
                return [probe._info(handle) for handle in probe._list_managed()]
        finally:
            probe.close_client()

    @classmethod
    def attach(cls, runtime_id: str, *, docker_host: str | None = None, **kwargs: Any) -> EngineProvider:
        provider = cls(docker_host=docker_host)
        try:
            with translate_docker_errors(f"finding {runtime_id}"):
                try:
                    handle = provider._get(runtime_id)
                except docker.errors.NotFound as exc:
                    raise RuntimeNotFoundError(
                        f"no {cls.kind} runtime {runtime_id!r}", runtime_id=runtime_id
                    ) from exc
                if not is_managed(cls._labels_of(handle), cls.kind):
                    raise RuntimeNotFoundError(
                        f"{runtime_id!r} was not started by OpenEnv", runtime_id=runtime_id
                    )
                provider._adopt(handle)
        except ProviderError:
            provider.close_client()
            raise
        return provider
