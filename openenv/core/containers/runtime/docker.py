"""Local Docker provider: one labelled container per environment, published on 127.0.0.1 only."""

from __future__ import annotations

import uuid
from typing import Any

from openenv.core.origin_policy import ALLOW_HOSTS_ENV

from .base import LABEL_PREFIX, MANAGED_BY, RuntimeInfo, RuntimeStatus
from .docker_engine import (
    EngineProvider,
    env_label,
    label_filters,
    managed_labels,
    translate_docker_errors,
)
from .errors import ProviderError, StartupError
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
        if self._handle is not None:
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
            # published on loopback only: the server answers loopback names and IPs, no DNS name
            # a rebinding page could use (docs/security.md); the caller's env_vars may widen it
            "environment": {ALLOW_HOSTS_ENV: "localhost", **(env_vars or {})},
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
            self._handle = client.containers.create(image, **options)
        self.runtime_id = self._handle.id
        try:
            with translate_docker_errors(f"starting {image}"):
                self._handle.start()
            self._check_alive()
            self.base_url = _address(self._handle)
            if self.base_url is None:
                raise StartupError(
                    f"container {name} has no address for port {container_port}", log_tail=self.logs(50)
                )
        except ProviderError:
            self.stop_quietly()
            raise
        return self.base_url

    def _check_alive(self) -> None:
        with translate_docker_errors("checking the container"):
            self._handle.reload()
        state = self._handle.attrs["State"]
        health = (state.get("Health") or {}).get("Status")
        if state["Status"] in ("exited", "dead"):
            raise StartupError(
                f"container {self._handle.name} exited with code {state.get('ExitCode')} while starting",
                log_tail=self.logs(50),
                exit_code=state.get("ExitCode"),
            )
        if health == "unhealthy":
            raise StartupError(f"container {self._handle.name} reports unhealthy", log_tail=self.logs(50))

    def _live_status(self) -> RuntimeStatus:
        return _STATUS.get(self._handle.status, RuntimeStatus.STARTING)

    def _read_logs(self, tail: int) -> str:
        return self._handle.logs(tail=tail).decode("utf-8", "replace")

    def _remove(self) -> None:
        self._handle.stop(timeout=5)
        self._handle.remove(v=True, force=True)

    def _list_managed(self) -> list[Any]:
        filters = label_filters(provider=self.kind, project=self.project)
        return self.client.containers.list(all=True, ignore_removed=True, filters=filters)

    def _get(self, runtime_id: str) -> Any:
        return self.client.containers.get(runtime_id)

    @staticmethod
    def _labels_of(handle: Any) -> dict[str, str]:
        return handle.labels or {}

    def _info(self, handle: Any) -> RuntimeInfo:
        return RuntimeInfo(
            runtime_id=handle.id,
            provider=self.kind,
            project=self.project,
            env_name=env_label(handle.labels),
            base_url=_address(handle) if handle.status == "running" else None,
            status=_STATUS.get(handle.status, RuntimeStatus.STARTING),
            extra={"name": handle.name, "image": handle.attrs["Config"]["Image"]},
        )

    def _adopt(self, handle: Any) -> None:
        super()._adopt(handle)
        if handle.status == "running":
            self.base_url = _address(handle)
