"""Ray provider: each environment server runs inside a Ray actor, somewhere on a Ray cluster.

    provider = RayProvider(address="127.0.0.1:6379")
    url = provider.start_container("echo", cpus=0.5)        # one env, placed by Ray
    provider.wait_for_ready(url)
    envs = provider.start_many("echo", 8, spread=True)      # eight, spread over the nodes, all healthy

The actor (``ray_actor.EnvServerActor``) starts the server on its node's address and reports the
URL. A node whose address is not loopback (every real cluster) gets a server that requires a bearer
token: the one given (``token=``), else a random one minted per environment; ``headers(url)`` gives
what a client must send, and every client this package hands out for the env sends it. The token
never goes into a URL, a log or ``list_runtimes``. ``cpus``/``memory``/``resources`` are the actor's Ray resources, so placement follows them.
Actors are named (``ray-<hex>``) in the namespace ``openenv-<project>``: ``list_runtimes`` and
``attach`` find them again. A non-detached actor dies with the driver that created it (and its
server with it); ``detached=True`` lets it outlive the driver until stopped.

Ray is an optional extra (``pip install 'ray[default]'``), imported only when used.
"""

from __future__ import annotations

import concurrent.futures
import re
import secrets
import time
import uuid
from typing import Any

from .base import ContainerProvider, RuntimeInfo, RuntimeStatus
from .errors import (
    PlacementError,
    ProviderError,
    RuntimeNotFoundError,
    StartupError,
)
from .ray_cluster import _ray, connect, ray_unavailable_reason

__all__ = ["RayProvider", "ray_unavailable_reason"]

NAMESPACE_PREFIX = "openenv-"
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)([bkmg]?)$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_CALL_TIMEOUT_S = 10.0
_ALIVE_EVERY_S = 0.25


def parse_memory(memory: str | int | None) -> int | None:
    """Bytes from ``512m``/``2g``/an int (Ray's ``memory`` resource is in bytes)."""
    if memory is None or isinstance(memory, int):
        return memory
    match = _MEMORY.match(memory.strip())
    if not match:
        raise ProviderError(f"memory must look like 512m or 2g, not {memory!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


class RayProvider(ContainerProvider):
    """Runs an env server inside a Ray actor on a Ray cluster.

    Args:
        project: scopes listing and cleanup (default ``$OPENENV_PROJECT`` or ``"default"``).
        address: the cluster's GCS ``host:port`` (default ``RAY_ADDRESS``, or the cluster this
            process is already connected to).
        namespace: the actors' Ray namespace (default ``openenv-<project>``).
    """

    kind = "ray"

    def __init__(self, *, project: str | None = None, address: str | None = None,
                 namespace: str | None = None) -> None:
        super().__init__(project=project)
        self.address = address
        self.namespace = namespace or NAMESPACE_PREFIX + self.project
        self.node_id: str | None = None
        self.node_ip: str | None = None
        self.detached = False
        self._actor: Any = None
        self._pending: Any = None
        self._launch: tuple[str, dict[str, Any]] | None = None
        self._stopped = False
        self._ready = False
        self._alive_checked = 0.0
        self._token: str | None = None

    # -- start --------------------------------------------------------------------------------
    def start_container(self, image: str, port: int | None = None, env_vars: dict[str, str] | None = None,
                        **options: Any) -> str:
        """Place an actor serving ``image`` and start the server; return its URL (not yet healthy).

        ``image`` is a bundled env name, ``module:app``, an env directory (on the node) or a Docker
        image (on a node with Docker; ``runtime="docker"`` says so when it is ambiguous).

        Options: ``cpus`` (default 1), ``memory`` (``512m``), ``resources`` (custom Ray resources),
        ``node_id`` (pin to a node), ``spread`` (default True: Ray's SPREAD strategy),
        ``runtime`` (auto/process/docker), ``env_name``, ``detached``, ``token`` (the bearer token
        the server requires; default: one minted for this env when the node's address is not
        loopback, see ``headers``), ``cwd``, ``container_port``, ``start_timeout_s`` (placement
        and start deadline, default 60).

        Raises:
            PlacementError: no node can hold the requested resources, or none freed them in time.
            StartupError: the actor or server failed while starting (with the server's log tail).
        """
        timeout_s = float(options.pop("start_timeout_s", 60.0))
        self._begin(image, port, env_vars, options)
        return self._finish(time.monotonic() + timeout_s)

    def start_many(self, target: str, n: int, spread: bool = True, *, timeout_s: float = 60.0,
                   **options: Any) -> list[RayProvider]:
        """Start ``n`` envs of ``target`` at once and wait until all are healthy.

        Returns one provider per env (each owns its actor); ``spread`` places them on different
        nodes as far as resources allow. If any fails, all are stopped and the error is raised.
        """
        if n < 1:
            raise ProviderError(f"n must be at least 1, not {n}")
        deadline = time.monotonic() + timeout_s
        group = [RayProvider(project=self.project, address=self.address, namespace=self.namespace)
                 for _ in range(n)]
        try:
            for provider in group:
                provider._begin(target, None, options.get("env_vars"),
                                {**{k: v for k, v in options.items() if k != "env_vars"}, "spread": spread})
            for provider in group:
                provider._finish(deadline)
            with concurrent.futures.ThreadPoolExecutor(min(n, 16), thread_name_prefix="ray-ready") as pool:
                waits = [pool.submit(p.wait_for_ready, p.base_url, max(0.1, deadline - time.monotonic()))
                         for p in group]
                for wait in waits:
                    wait.result()
        except BaseException:
            for provider in group:
                provider.stop_quietly()
            raise
        return group

    def _begin(self, target: str, port: int | None, env_vars: dict[str, str] | None,
               options: dict[str, Any]) -> None:
        """Check the request against the cluster and create the actor (placement is asynchronous)."""
        if self._actor is not None and not self._stopped:
            raise ProviderError(f"this provider already started {self.runtime_id}; stop it first")
        options = dict(options)
        cpus = options.pop("cpus", None)
        cpus = 1.0 if cpus is None else float(cpus)
        if cpus < 0:
            raise ProviderError(f"cpus must not be negative, not {cpus:g}")
        memory = parse_memory(options.pop("memory", None))
        resources = dict(options.pop("resources", None) or {})
        node_id = options.pop("node_id", None)
        spread = bool(options.pop("spread", True))
        detached = bool(options.pop("detached", False))
        token = options.pop("token", None)
        spec = {
            "target": target, "port": port, "env_vars": dict(env_vars or {}),
            "runtime": options.pop("runtime", "auto"), "env_name": options.pop("env_name", None),
            "token": token or secrets.token_urlsafe(32), "token_minted": not token, "cwd": options.pop("cwd", None),
            "container_port": options.pop("container_port", None), "host": options.pop("host", None),
            "project": self.project, "detached": detached,
        }
        if options:
            raise ProviderError(f"the Ray provider does not support: {', '.join(sorted(options))}")
        ray = connect(self.address)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .ray_actor import RemoteEnvServer

        wanted = {"CPU": cpus, **({"memory": float(memory)} if memory else {}), **resources}
        self._check_feasible(ray, wanted, node_id)
        runtime_id = f"ray-{uuid.uuid4().hex[:12]}"
        spec["runtime_id"] = runtime_id
        if node_id:
            strategy: Any = NodeAffinitySchedulingStrategy(node_id, soft=False)
        else:
            strategy = "SPREAD" if spread else "DEFAULT"
        self._actor = RemoteEnvServer.options(
            name=runtime_id, namespace=self.namespace, lifetime="detached" if detached else None,
            num_cpus=cpus, memory=memory, resources=resources or None, scheduling_strategy=strategy,
        ).remote(spec)
        self._pending = self._actor.start.remote()
        self._launch = (target, {"port": port, "env_vars": env_vars, "cpus": cpus, "memory": memory,
                                 "resources": resources, "node_id": node_id, "spread": spread,
                                 "detached": detached, "token": token, **{k: v for k, v in spec.items() if k in
                                 ("runtime", "env_name", "cwd", "container_port", "host")}})
        self.runtime_id = runtime_id
        self.detached = detached
        self._stopped = self._ready = False
        self.base_url = self.node_id = self.node_ip = None
        self._token = spec["token"]  # kept only if the actor says its server requires it (_take)

    @staticmethod
    def _check_feasible(ray: Any, wanted: dict[str, float], node_id: str | None) -> None:
        """Fail at once when no living node could ever hold ``wanted`` (rather than pend forever)."""
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if node_id:
            nodes = [n for n in nodes if n["NodeID"] == node_id]
            if not nodes:
                raise PlacementError(f"no living node {node_id} in the Ray cluster")
        if any(all(n["Resources"].get(k, 0.0) >= v for k, v in wanted.items() if v) for n in nodes):
            return
        largest = {k: max((n["Resources"].get(k, 0.0) for n in nodes), default=0.0) for k in wanted}
        asked = ", ".join(f"{k}={_fmt(v, k)}" for k, v in wanted.items() if v)
        most = ", ".join(f"{k}={_fmt(v, k)}" for k, v in largest.items())
        raise PlacementError(f"no node of the Ray cluster can hold this env ({asked}); the most any "
                             f"node has is {most}")

    def _finish(self, deadline: float) -> str:
        """Wait until the actor is placed and its server started; its URL."""
        ray = _ray()
        try:
            info = ray.get(self._pending, timeout=max(0.1, deadline - time.monotonic()))
        except ray.exceptions.GetTimeoutError:
            self.stop_quietly()
            raise PlacementError(
                f"{self.runtime_id} was not placed and started in time: the cluster has no node with "
                "these resources free (they are taken by other actors)") from None
        except ray.exceptions.RayActorError as exc:
            self.stop_quietly()
            raise StartupError(f"the Ray actor for {self.runtime_id} died while starting: {_reason(exc)}") from None
        except ray.exceptions.RayError as exc:
            self.stop_quietly()
            raise StartupError(f"starting {self.runtime_id} failed in Ray: {_reason(exc)}") from None
        finally:
            self._pending = None
        if "error" in info:
            self.stop_quietly()
            raise StartupError(f"{self.runtime_id} could not start its server: {info['error']}",
                               log_tail=info.get("log_tail") or "")
        self._take(info)
        return self.base_url

    def _take(self, info: dict[str, Any], token: str | None = None) -> None:
        if not info.get("auth"):
            self._token = None
        elif token is not None:
            self._token = token
        self.base_url = info["base_url"]
        self.node_id = info["node_id"]
        self.node_ip = info["node_ip"]
        self.detached = bool(info.get("detached"))

    def headers(self, base_url: str | None = None) -> dict[str, str]:
        """What a client must send to this env's server: its bearer token, or nothing."""
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    # -- life ------------------------------------------------------------------------------------
    def _call(self, method: str, *args: Any, timeout_s: float = _CALL_TIMEOUT_S) -> Any:
        """Call an actor method; a dead actor raises ``RuntimeNotFoundError`` (with Ray's reason)."""
        if self._actor is None:
            raise ProviderError("nothing started yet")
        ray = _ray()
        try:
            return ray.get(getattr(self._actor, method).remote(*args), timeout=timeout_s)
        except ray.exceptions.RayActorError as exc:
            raise RuntimeNotFoundError(f"the Ray actor {self.runtime_id} is gone: {_reason(exc)}",
                                       runtime_id=self.runtime_id) from None
        except ray.exceptions.GetTimeoutError:
            raise ProviderError(f"the Ray actor {self.runtime_id} did not answer in {timeout_s:g}s") from None

    def _check_alive(self) -> None:
        now = time.monotonic()
        if now - self._alive_checked < _ALIVE_EVERY_S:
            return
        self._alive_checked = now
        try:
            code = self._call("poll")
        except RuntimeNotFoundError as exc:
            raise StartupError(exc.message) from None
        if code is not None:
            raise StartupError(f"the env server of {self.runtime_id} exited with code {code} while starting",
                               log_tail=self.safe_logs(50), exit_code=code)

    def wait_for_ready(self, base_url: str | None = None, timeout_s: float = 30.0) -> None:
        super().wait_for_ready(base_url, timeout_s)
        self._ready = True

    def ensure_running(self) -> None:
        """Raise ``RuntimeNotFoundError`` if the actor or its server is gone (e.g. the actor was killed)."""
        code = self._call("poll")
        if code is not None:
            raise RuntimeNotFoundError(f"the env server of {self.runtime_id} exited with code {code}",
                                       runtime_id=self.runtime_id)

    def status(self) -> RuntimeStatus:
        if self._stopped:
            return RuntimeStatus.STOPPED
        try:
            self.ensure_running()
        except RuntimeNotFoundError:
            return RuntimeStatus.EXITED
        return RuntimeStatus.RUNNING if self._ready else RuntimeStatus.STARTING

    def logs(self, tail: int = 100) -> str:
        if self._actor is None:
            return ""
        return self._call("logs", tail)

    def replace(self, *, timeout_s: float = 60.0) -> str:
        """Stop this env (dead or alive) and start the same target with the same options, healthy."""
        if self._launch is None:
            raise ProviderError("this provider started nothing to replace (an attached actor keeps "
                                "no launch options: start a new one)")
        target, launch = self._launch
        self.stop_container()
        launch = dict(launch)
        port, env_vars = launch.pop("port"), launch.pop("env_vars")
        url = self.start_container(target, port, env_vars, start_timeout_s=timeout_s, **launch)
        self.wait_for_ready(url, timeout_s)
        return url

    def stop_container(self) -> None:
        """Stop the server, then end the actor; calling it again does nothing."""
        if self._stopped or self._actor is None:
            return
        ray = _ray()
        if self.base_url is not None:  # a server was started: stop it gracefully first
            try:
                ray.get(self._actor.stop.remote(), timeout=20)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                pass  # already dead, or stuck: ending the actor closes the supervisor's pipe either way
            except ray.exceptions.RayError as exc:
                raise ProviderError(f"stopping {self.runtime_id}: {_reason(exc)}") from None
        ray.kill(self._actor, no_restart=True)  # also cancels an actor still waiting for placement
        self._stopped = True
        self._ready = False

    # -- finding them again -------------------------------------------------------------------------
    @classmethod
    def list_runtimes(cls, *, project: str | None = None, address: str | None = None,
                      namespace: str | None = None, **kwargs: Any) -> list[RuntimeInfo]:
        probe = cls(project=project, address=address, namespace=namespace)
        ray = connect(address)
        names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                 if a["namespace"] == probe.namespace and a["name"].startswith("ray-")]
        found = []
        for name in sorted(names):
            try:
                provider = cls._bind(ray, name, probe.namespace, address, probe.project)
                info = provider._call("info", timeout_s=5.0)
            except ProviderError:
                continue  # it died while we listed
            alive = info.get("exit_code") is None
            found.append(RuntimeInfo(
                runtime_id=name, provider=cls.kind, project=probe.project, env_name=info.get("env_name"),
                base_url=info.get("base_url"), status=RuntimeStatus.RUNNING if alive else RuntimeStatus.EXITED,
                started_at=info.get("started_at"),
                extra={k: info.get(k) for k in ("node_id", "node_ip", "runtime", "detached", "pid")}
                | {"namespace": probe.namespace},
            ))
        return found

    @classmethod
    def _bind(cls, ray: Any, name: str, namespace: str, address: str | None, project: str) -> RayProvider:
        try:
            actor = ray.get_actor(name, namespace=namespace)
        except ValueError:
            raise RuntimeNotFoundError(f"no Ray actor {name!r} in namespace {namespace}", runtime_id=name) from None
        provider = cls(project=project, address=address, namespace=namespace)
        provider._actor = actor
        provider.runtime_id = name
        return provider

    @classmethod
    def attach(cls, runtime_id: str, *, address: str | None = None, namespace: str | None = None,
               **kwargs: Any) -> RayProvider:
        """A provider bound to the living actor ``runtime_id`` (searched in every openenv namespace)."""
        ray = connect(address)
        if namespace is None:
            spaces = [a["namespace"] for a in ray.util.list_named_actors(all_namespaces=True)
                      if a["name"] == runtime_id and a["namespace"].startswith(NAMESPACE_PREFIX)]
            if not spaces:
                raise RuntimeNotFoundError(f"no living Ray actor {runtime_id!r}", runtime_id=runtime_id)
            namespace = spaces[0]
        project = kwargs.get("project") or namespace.removeprefix(NAMESPACE_PREFIX)
        provider = cls._bind(ray, runtime_id, namespace, address, project)
        info = provider._call("info")
        provider._take(info, provider._call("credentials") if info.get("auth") else None)
        provider._ready = True
        return provider

    @classmethod
    def cleanup(cls, *, project: str | None = None, address: str | None = None,
                namespace: str | None = None, **kwargs: Any) -> int:
        found = cls.list_runtimes(project=project, address=address, namespace=namespace)
        probe = cls(project=project, namespace=namespace)
        for info in found:
            cls.attach(info.runtime_id, address=address, namespace=probe.namespace).stop_container()
        return len(found)

    @staticmethod
    def nodes(address: str | None = None) -> list[dict[str, Any]]:
        """The cluster's living nodes: ``node_id``, ``node_ip``, ``resources`` (for pickers and checks)."""
        ray = connect(address)
        return [{"node_id": n["NodeID"], "node_ip": n["NodeManagerAddress"], "resources": n["Resources"]}
                for n in ray.nodes() if n.get("Alive")]


def _fmt(value: float, key: str) -> str:
    if key == "memory":
        return f"{value / 1024**2:.0f}MiB"
    return f"{value:g}"


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
