"""Docker Swarm provider: a labelled service with N replicas and resource limits.

Replicas join a swarm-scoped bridge network and are reached from this node on their bridge
addresses (nothing is published on the node's interfaces): ``base_urls`` lists one URL per
replica, ``base_url`` is the first. Readiness means every replica's task is running, its
container healthy (when the image has a HEALTHCHECK) and its ``/health`` answering.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import docker.errors
import docker.types
import docker.utils

from .base import RuntimeInfo, RuntimeStatus
from .docker import PORT_LABEL, ensure_network
from .docker_engine import (
    EngineProvider,
    env_label,
    label_filters,
    managed_labels,
    translate_docker_errors,
)
from .errors import (
    EngineUnavailableError,
    ProviderError,
    StartupError,
    StartupTimeoutError,
)

__all__ = ["DockerSwarmProvider"]

OPEN_NETWORK = "openenv-swarm"
CLOSED_NETWORK = "openenv-swarm-internal"
_FAILED = {"failed", "rejected", "orphaned", "complete"}  # an env server never completes


class DockerSwarmProvider(EngineProvider):
    """Runs an env image as a Docker Swarm service on this node's swarm.

    Args:
        project: scopes listing and cleanup (default ``$OPENENV_PROJECT`` or ``"default"``).
        docker_host: engine URL of a swarm manager (default ``DOCKER_HOST`` or the local socket).
    """

    kind = "swarm"

    def __init__(self, *, project: str | None = None, docker_host: str | None = None) -> None:
        super().__init__(project=project, docker_host=docker_host)
        self.base_urls: list[str] = []
        self.replicas = 0
        self._network = OPEN_NETWORK
        self._container_port = 8000

    def _connect(self) -> Any:
        client = super()._connect()
        with translate_docker_errors("checking the swarm"):
            state = client.info().get("Swarm", {}).get("LocalNodeState")
        if state != "active":
            client.close()
            raise EngineUnavailableError(f"this Docker engine is not in an active swarm (state: {state})")
        return client

    def start_container(
        self,
        image: str,
        port: int | None = None,
        env_vars: dict[str, str] | None = None,
        *,
        replicas: int = 1,
        env_name: str | None = None,
        container_port: int = 8000,
        memory: str | int | None = None,
        cpus: float | None = None,
        pids_limit: int | None = None,
        read_only: bool = False,
        drop_capabilities: bool = True,
        network: bool = True,
        start_timeout_s: float = 60.0,
        **kwargs: Any,
    ) -> str:
        """Create the service and wait until its replicas are scheduled; return the first URL."""
        if kwargs:
            raise ProviderError(f"the Swarm provider does not support: {', '.join(sorted(kwargs))}")
        if port is not None:
            raise ProviderError("swarm replicas are reached on their bridge addresses; no port is published")
        if replicas < 1:
            raise ProviderError(f"replicas must be at least 1, not {replicas}")
        if self._handle is not None:
            raise ProviderError(f"this provider already started {self.runtime_id}; stop it first")
        client = self.client
        self._container_port = container_port
        self._network = ensure_network(
            client, OPEN_NETWORK if network else CLOSED_NETWORK, internal=not network, scope="swarm"
        )
        labels = {
            **managed_labels(
                provider=self.kind, project=self.project, env_name=env_name or image, image=image
            ),
            PORT_LABEL: str(container_port),
        }
        resources = docker.types.Resources(
            cpu_limit=int(cpus * 1e9) if cpus else None,
            mem_limit=docker.utils.parse_bytes(memory) if isinstance(memory, str) else memory,
        )
        if pids_limit:
            resources.setdefault("Limits", {})["Pids"] = pids_limit
        with translate_docker_errors(f"starting {image}"):
            client.images.get(image)
            self._handle = client.services.create(
                image,
                name=f"openenv-{uuid.uuid4().hex[:12]}",
                labels=labels,
                container_labels=labels,
                env=[f"{k}={v}" for k, v in (env_vars or {}).items()],
                mode=docker.types.ServiceMode("replicated", replicas=replicas),
                networks=[self._network],
                endpoint_spec=docker.types.EndpointSpec(mode="dnsrr"),
                resources=resources,
                restart_policy=docker.types.RestartPolicy(condition="on-failure", delay=1_000_000_000),
                read_only=read_only or None,
                mounts=[docker.types.Mount("/tmp", "", type="tmpfs")] if read_only else None,
                cap_drop=["ALL"] if drop_capabilities else None,
            )
        self.runtime_id = self._handle.id
        self.replicas = replicas
        try:
            self._await_replicas(time.monotonic() + start_timeout_s)
        except ProviderError:
            self.stop_quietly()
            raise
        return self.base_url

    def _tasks(self) -> list[dict[str, Any]]:
        with translate_docker_errors("reading service tasks"):
            return self._handle.tasks()

    def _replica_urls(self, *, healthy: bool, strict: bool = True) -> list[str]:
        """URLs of running replicas (only healthy ones when ``healthy``).

        ``strict`` (while starting): a failed task raises ``StartupError`` with the service logs.
        """
        urls = []
        for task in self._tasks():
            status = task.get("Status", {})
            if strict and status.get("State") in _FAILED:
                code = status.get("ContainerStatus", {}).get("ExitCode")
                raise StartupError(
                    f"a replica of {self._handle.name} stopped while starting "
                    f"({status['State']}, exit code {code}): {status.get('Err') or 'no error reported'}",
                    log_tail=self.logs(50),
                    exit_code=code,
                )
            if status.get("State") != "running" or task.get("DesiredState") != "running":
                continue
            with translate_docker_errors("inspecting a replica"):
                try:
                    container = self.client.containers.get(status["ContainerStatus"]["ContainerID"])
                except docker.errors.NotFound:
                    continue
            state = container.attrs["State"]
            if healthy and (state.get("Health") or {}).get("Status", "healthy") != "healthy":
                continue
            ip = container.attrs["NetworkSettings"]["Networks"].get(self._network, {}).get("IPAddress")
            if ip:
                urls.append(f"http://{ip}:{self._container_port}")
        return sorted(urls)

    def _await_replicas(self, deadline: float, *, healthy: bool = False, strict: bool = True) -> None:
        while True:
            urls = self._replica_urls(healthy=healthy, strict=strict)
            if len(urls) == self.replicas:
                self.base_urls = urls
                self.base_url = urls[0]
                return
            if time.monotonic() >= deadline:
                raise StartupTimeoutError(
                    f"{self._handle.name}: {len(urls)} of {self.replicas} replicas "
                    f"{'healthy' if healthy else 'running'} in time",
                    log_tail=self.logs(50),
                )
            time.sleep(0.25)

    def _check_alive(self) -> None:
        self._replica_urls(healthy=False)

    def _health_urls(self, base_url: str) -> list[str]:
        return [url + "/health" for url in self.base_urls or [base_url]]

    def wait_for_ready(self, base_url: str | None = None, timeout_s: float = 60.0) -> None:
        """Wait until every replica is running, healthy and answering ``/health``."""
        if self._handle is None:
            raise StartupError("wait_for_ready called before start_container")
        deadline = time.monotonic() + timeout_s
        try:
            self._await_replicas(deadline, healthy=True)
        except ProviderError:
            self.stop_quietly()
            raise
        super().wait_for_ready(base_url, max(0.1, deadline - time.monotonic()))

    def scale(self, replicas: int, *, timeout_s: float = 60.0) -> list[str]:
        """Change the replica count and wait until that many are healthy; return their URLs."""
        if self._handle is None or self._stopped:
            raise ProviderError("nothing is running to scale")
        if replicas < 1:
            raise ProviderError(f"replicas must be at least 1, not {replicas}")
        with translate_docker_errors(f"scaling {self._handle.name}"):
            # Send the current spec back with only the count changed: the SDK's own scale()
            # rebuilds the spec and so restarts every replica.
            current = self.client.api.inspect_service(self._handle.id)
            spec = current["Spec"]
            self.client.api.update_service(
                self._handle.id,
                current["Version"]["Index"],
                task_template=spec["TaskTemplate"],
                name=spec["Name"],
                labels=spec.get("Labels"),
                mode={"Replicated": {"Replicas": replicas}},
                update_config=spec.get("UpdateConfig"),
                rollback_config=spec.get("RollbackConfig"),
                endpoint_spec=spec.get("EndpointSpec"),
            )
        self.replicas = replicas
        self._await_replicas(time.monotonic() + timeout_s, healthy=True, strict=False)
        return list(self.base_urls)

    def _live_status(self) -> RuntimeStatus:
        states = [
            t.get("Status", {}).get("State") for t in self._tasks() if t.get("DesiredState") == "running"
        ]
        if states and all(s == "running" for s in states):
            return RuntimeStatus.RUNNING
        return RuntimeStatus.STARTING if states else RuntimeStatus.EXITED

    def _read_logs(self, tail: int) -> str:
        return b"".join(self._handle.logs(stdout=True, stderr=True, tail=tail)).decode("utf-8", "replace")

    def _remove(self) -> None:
        """Remove the service, then its containers (stopped gracefully, briefly) until none is left."""
        api = self.client.api
        filters = {"label": f"com.docker.swarm.service.id={self._handle.id}"}
        self._handle.remove()
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:
            left = api.containers(all=True, quiet=True, filters=filters)
            if not left:
                break
            for container in left:
                _remove_container(api, container["Id"])
            time.sleep(0.1)

    def _list_managed(self) -> list[Any]:
        return self.client.services.list(filters=label_filters(provider=self.kind, project=self.project))

    def _get(self, runtime_id: str) -> Any:
        return self.client.services.get(runtime_id)

    @staticmethod
    def _labels_of(handle: Any) -> dict[str, str]:
        return handle.attrs["Spec"].get("Labels") or {}

    def _info(self, handle: Any) -> RuntimeInfo:
        spec = handle.attrs["Spec"]
        return RuntimeInfo(
            runtime_id=handle.id,
            provider=self.kind,
            project=self.project,
            env_name=env_label(spec.get("Labels")),
            base_url=None,
            status=RuntimeStatus.RUNNING,
            extra={"name": handle.name, "replicas": spec["Mode"].get("Replicated", {}).get("Replicas")},
        )

    def _adopt(self, handle: Any) -> None:
        super()._adopt(handle)
        spec = handle.attrs["Spec"]
        self.replicas = spec["Mode"].get("Replicated", {}).get("Replicas", 1)
        self._container_port = int(spec["Labels"].get(PORT_LABEL, "8000"))
        networks = spec.get("TaskTemplate", {}).get("Networks") or []
        if networks:
            self._network = self.client.networks.get(networks[0]["Target"]).name
        self.base_urls = self._replica_urls(healthy=False, strict=False)
        self.base_url = self.base_urls[0] if self.base_urls else None


def _remove_container(api: Any, container_id: str) -> None:
    """Stop (3 s grace) and remove one container; the swarm agent may be removing it too."""
    try:
        api.stop(container_id, timeout=3)
        api.remove_container(container_id, force=True)
    except docker.errors.APIError as exc:
        if exc.status_code not in (404, 409):  # gone already, or its removal is in progress
            raise
