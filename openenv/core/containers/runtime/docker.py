"""Local Docker provider: one labelled container per environment, published on 127.0.0.1 only."""

from __future__ import annotations

import uuid
from typing import Any

import docker.errors

from .base import LABEL_PREFIX, MANAGED_BY, RuntimeInfo, RuntimeStatus
from .docker_engine import (
    EngineProvider,
    env_label,
    is_managed,
    label_filters,
    managed_labels,
    translate_docker_errors,
)
from .errors import ProviderError, RuntimeNotFoundError, StartupError
from .ports import HOST, ensure_port_free

__all__ = ["LocalDockerProvider", "ensure_network"]

INTERNAL_NETWORK = "openenv-internal"
PORT_LABEL = f"{LABEL_PREFIX}.container-port"
_STATUS = {
    "created": RuntimeStatus.STARTING,
    "restarting": RuntimeStatus.STARTING,
    "running": RuntimeStatus.RUNNING,
    "paused": RuntimeStatus.RUNNING,
    "exited": RuntimeStatus.EXITED,
    "dead": RuntimeStatus.EXITED,
    "removing": RuntimeStatus.STOPPED,
}


def ensure_network(client: Any, name: str, *, internal: bool, scope: str = "local") -> str:
    """A labelled bridge network, made once; ``internal`` ones have no route out.

    Either way its containers are reachable from this host on their bridge addresses only.
    """
    with translate_docker_errors(f"preparing network {name}"):
        if not client.networks.list(names=[name]):
            client.networks.create(
                name,
                driver="bridge",
                internal=internal,
                scope=scope,
                attachable=scope == "swarm",
                labels={f"{LABEL_PREFIX}.managed-by": MANAGED_BY},
            )
    return name


def _address(container: Any) -> str | None:
    """Where the env server in ``container`` answers: its loopback publish, else its internal address."""
    port = int((container.labels or {}).get(PORT_LABEL, "8000"))
    settings = container.attrs["NetworkSettings"]
    bindings = (settings.get("Ports") or {}).get(f"{port}/tcp") or []
    if bindings:
        return f"http://{HOST}:{bindings[0]['HostPort']}"
    internal = (settings.get("Networks") or {}).get(INTERNAL_NETWORK, {}).get("IPAddress")
    return f"http://{internal}:{port}" if internal else None


class LocalDockerProvider(EngineProvider):
    """Runs an env image as a local container.

    Args:
        project: scopes listing and cleanup (default ``$OPENENV_PROJECT`` or ``"default"``).
        docker_host: engine URL (default ``DOCKER_HOST`` or the local socket).
    """

    kind = "docker"

    def __init__(self, *, project: str | None = None, docker_host: str | None = None) -> None:
        super().__init__(project=project, docker_host=docker_host)
        self._container: Any = None

    def start_container(
        self,
        image: str,
        port: int | None = None,
        env_vars: dict[str, str] | None = None,
        *,
        env_name: str | None = None,
        container_port: int = 8000,
        memory: str | int | None = None,
        cpus: float | None = None,
        pids_limit: int | None = None,
        read_only: bool = False,
        drop_capabilities: bool = True,
        no_new_privileges: bool = True,
        network: bool = True,
        **kwargs: Any,
    ) -> str:
        """Create and start a container of ``image``; return its base URL.

        ``network=False`` puts it on an internal network (no way out); it is then reached on its
        bridge address from this host rather than through a published port.
        """
        if kwargs:
            raise ProviderError(f"the Docker provider does not support: {', '.join(sorted(kwargs))}")
        if self._container is not None:
            raise ProviderError(f"this provider already started {self.runtime_id}; stop it first")
        if port is not None:
            ensure_port_free(port)
        client = self.client
        name = f"openenv-{uuid.uuid4().hex[:12]}"
        options: dict[str, Any] = {
            "name": name,
            "detach": True,
            "labels": {
                **managed_labels(
                    provider=self.kind, project=self.project, env_name=env_name or image, image=image
                ),
                PORT_LABEL: str(container_port),
            },
            "environment": dict(env_vars or {}),
            "mem_limit": memory,
            "nano_cpus": int(cpus * 1e9) if cpus else None,
            "pids_limit": pids_limit,
            "read_only": read_only,
            "tmpfs": {"/tmp": "rw,size=64m"} if read_only else None,
            "cap_drop": ["ALL"] if drop_capabilities else None,
            "security_opt": ["no-new-privileges"] if no_new_privileges else None,
        }
        if network:
            options["ports"] = {f"{container_port}/tcp": (HOST, port)}
        else:
            if port is not None:
                raise ProviderError("a port cannot be published for a container without network")
            options["network"] = ensure_network(client, INTERNAL_NETWORK, internal=True)
        with translate_docker_errors(f"starting {image}"):
            client.images.get(image)
            self._container = client.containers.create(image, **options)
        self.runtime_id = self._container.id
        try:
            with translate_docker_errors(f"starting {image}"):
                self._container.start()
            self._check_alive()
            self.base_url = _address(self._container)
            if self.base_url is None:
                raise StartupError(
                    f"container {name} has no address for port {container_port}", log_tail=self.logs(50)
                )
        except ProviderError:
            self._stop_quietly()
            raise
        return self.base_url

    def _check_alive(self) -> None:
        with translate_docker_errors("checking the container"):
            self._container.reload()
        state = self._container.attrs["State"]
        health = (state.get("Health") or {}).get("Status")
        if state["Status"] in ("exited", "dead"):
            raise StartupError(
                f"container {self._container.name} exited with code {state.get('ExitCode')} while starting",
                log_tail=self.logs(50),
                exit_code=state.get("ExitCode"),
            )
        if health == "unhealthy":
            raise StartupError(f"container {self._container.name} reports unhealthy", log_tail=self.logs(50))

    def status(self) -> RuntimeStatus:
        if self._stopped:
            return RuntimeStatus.STOPPED
        if self._container is None:
            raise ProviderError("nothing started yet")
        with translate_docker_errors("reading container status"):
            try:
                self._container.reload()
            except docker.errors.NotFound:
                return RuntimeStatus.STOPPED
        return _STATUS.get(self._container.status, RuntimeStatus.STARTING)

    def logs(self, tail: int = 100) -> str:
        if self._container is None or self._stopped:
            return ""
        with translate_docker_errors("reading container logs"):
            return self._container.logs(tail=tail).decode("utf-8", "replace")

    def stop_container(self) -> None:
        """Stop and remove the container; a second call (or a gone container) is a no-op."""
        if self._stopped or self._container is None:
            self.close_client()
            return
        with translate_docker_errors(f"stopping {self._container.name}"):
            try:
                self._container.stop(timeout=5)
                self._container.remove(v=True, force=True)
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
            with translate_docker_errors("listing containers"):
                containers = probe.client.containers.list(
                    all=True,
                    ignore_removed=True,
                    filters=label_filters(provider=cls.kind, project=probe.project),
                )
        finally:
            probe.close_client()
        found = []
        for container in containers:
            found.append(
                RuntimeInfo(
                    runtime_id=container.id,
                    provider=cls.kind,
                    project=probe.project,
                    env_name=env_label(container.labels),
                    base_url=_address(container) if container.status == "running" else None,
                    status=_STATUS.get(container.status, RuntimeStatus.STARTING),
                    extra={"name": container.name, "image": container.attrs["Config"]["Image"]},
                )
            )
        return found

    @classmethod
    def attach(cls, runtime_id: str, *, docker_host: str | None = None, **kwargs: Any) -> LocalDockerProvider:
        provider = cls(docker_host=docker_host)
        with translate_docker_errors(f"finding container {runtime_id}"):
            try:
                container = provider.client.containers.get(runtime_id)
            except docker.errors.NotFound as exc:
                raise RuntimeNotFoundError(f"no container {runtime_id!r}", runtime_id=runtime_id) from exc
        if not is_managed(container.labels, cls.kind):
            raise RuntimeNotFoundError(
                f"container {runtime_id!r} was not started by OpenEnv", runtime_id=runtime_id
            )
        provider.project = container.labels.get(f"{LABEL_PREFIX}.project", provider.project)
        provider._container = container
        provider.runtime_id = container.id
        if container.status == "running":
            provider.base_url = _address(container)
        return provider
