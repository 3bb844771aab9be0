"""Running environments: launch (in a thread, polled by a status fragment), health, logs, stop,
restart, attach by URL, and re-adoption of what the studio started before it restarted."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from openenv.core.containers.runtime import (
    PROVIDERS,
    ContainerProvider,
    ProviderError,
    RuntimeStatus,
    StartupError,
)
from webui.studio.errors import NotFoundError, StudioError
from webui.studio.settings import StudioSettings

__all__ = ["Health", "Launcher", "Runtime"]

log = logging.getLogger("openenv.studio")
HEALTH_TIMEOUT_S = 1.5
_GONE = {"process": "the process exited", "ray": "the Ray actor or its server is gone"}


@dataclass
class Health:
    ok: bool
    active: int | None = None
    max: int | None = None
    error: str = ""


@dataclass(eq=False)
class Runtime:
    """One environment the studio knows about; ``status`` is starting/running/failed/exited/attached."""

    id: str
    name: str
    provider: str
    target: str
    status: str
    base_url: str | None = None
    started_at: float = field(default_factory=time.time)
    options: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    log_tail: str = ""
    adopted: bool = False
    handle: ContainerProvider | None = None
    placement: str = ""  # where a cluster provider put it (Ray: the node)

    @property
    def live(self) -> bool:
        return self.status in ("running", "attached")

    @property
    def headers(self) -> dict[str, str]:
        """What every request to this runtime's server must carry (a Ray env's bearer token)."""
        return self.handle.headers(self.base_url) if self.handle is not None else {}

    @property
    def uptime_s(self) -> float:
        return max(0.0, time.time() - self.started_at)


class Launcher:
    """The studio's registry of runtimes (one per studio process)."""

    def __init__(self, settings: StudioSettings) -> None:
        self.settings = settings
        self.runtimes: dict[str, Runtime] = {}
        self._lock = threading.Lock()
        self._attached_path = settings.data_dir / "attached.json"
        self._ids_path = settings.data_dir / "runtime_ids.json"  # provider runtime id -> the studio's id

    # -- providers --------------------------------------------------------------------------
    def _provider_options(self, kind: str) -> dict[str, Any]:
        if kind == "process":
            return {"project": self.settings.project, "data_dir": self.settings.runtimes_dir}
        if kind == "ray":
            return {"project": self.settings.project, "address": self.settings.ray_address}
        return {"project": self.settings.project, "docker_host": self.settings.docker_host}

    def _class_options(self, kind: str) -> dict[str, Any]:
        opts = self._provider_options(kind)
        opts.pop("project")
        return opts

    # -- launch -----------------------------------------------------------------------------
    def launch(self, target: str, provider: str, options: dict[str, Any], *, name: str | None = None) -> Runtime:
        """Start ``target`` with ``provider`` in a background thread; poll ``get(id).status``."""
        if provider not in PROVIDERS:
            raise StudioError(f"unknown provider {provider!r}")
        rt = Runtime(id=uuid.uuid4().hex[:12], name=name or target, provider=provider, target=target,
                     status="starting", options=dict(options))
        with self._lock:
            self.runtimes[rt.id] = rt
        threading.Thread(target=self._start, args=(rt,), name=f"launch-{rt.id}", daemon=True).start()
        return rt

    def _start(self, rt: Runtime) -> None:
        handle = PROVIDERS[rt.provider](**self._provider_options(rt.provider))
        rt.handle = handle
        options = dict(rt.options)
        if rt.provider == "process":
            options["detach"] = True
        else:
            options["env_name"] = rt.name
        if rt.provider == "ray":
            options["detached"] = True  # outlives a studio restart, to be re-adopted
        try:
            rt.base_url = handle.start_container(rt.target, **options)
            if handle.runtime_id:
                self._remember_id(handle.runtime_id, rt.id)
            handle.wait_for_ready(rt.base_url, timeout_s=self.settings.launch_timeout_s)
        except StartupError as exc:
            rt.status, rt.error = "failed", exc.message
            rt.log_tail = str(exc.details.get("log_tail") or "")
        except ProviderError as exc:
            rt.status, rt.error = "failed", exc.message
            rt.log_tail = handle.safe_logs() if handle.runtime_id else ""
            handle.stop_quietly()
        except Exception as exc:  # a thread boundary: never leave the status fragment polling forever
            log.exception("launching %s with %s failed unexpectedly", rt.target, rt.provider)
            rt.status, rt.error = "failed", f"unexpected {type(exc).__name__}: {exc}"
            handle.stop_quietly()
        else:
            rt.started_at = time.time()
            rt.placement = _placement(getattr(handle, "node_id", None), getattr(handle, "node_ip", None))
            rt.status = "running"

    # -- lookup -------------------------------------------------------------------------------
    def get(self, runtime_id: str) -> Runtime:
        rt = self.runtimes.get(runtime_id)
        if rt is None:
            raise NotFoundError(f"no environment {runtime_id!r} (it may have been stopped)", what="runtime")
        return rt

    def listed(self) -> list[Runtime]:
        return sorted(self.runtimes.values(), key=lambda r: r.started_at, reverse=True)

    def live(self) -> list[Runtime]:
        return [r for r in self.listed() if r.live and r.base_url]

    # -- stop / restart / logs -------------------------------------------------------------
    def stop(self, runtime_id: str) -> Runtime:
        """Stop (or, for an attached URL, forget) a runtime and drop it from the list."""
        rt = self.get(runtime_id)
        if rt.handle is not None:
            rt.handle.stop_container()
        if rt.provider == "url":
            self._save_attached([r for r in self.runtimes.values() if r.provider == "url" and r is not rt])
        rt.status = "stopped"
        with self._lock:
            self.runtimes.pop(runtime_id, None)
        return rt

    def restart(self, runtime_id: str) -> Runtime:
        rt = self.get(runtime_id)
        if rt.provider == "url":
            raise StudioError("an attached server is not ours to restart")
        if rt.status == "starting":
            raise StudioError("it is still starting")
        if rt.handle is not None:
            rt.handle.stop_container()
        fresh = Runtime(id=rt.id, name=rt.name, provider=rt.provider, target=rt.target, status="starting",
                        options=rt.options)
        with self._lock:
            self.runtimes[rt.id] = fresh
        threading.Thread(target=self._start, args=(fresh,), name=f"restart-{rt.id}", daemon=True).start()
        return fresh

    def logs(self, runtime_id: str, lines: int) -> str:
        rt = self.get(runtime_id)
        if rt.handle is None:
            return rt.log_tail or "(no logs: this server was attached by URL)"
        try:
            return rt.handle.logs(lines) or rt.log_tail
        except ProviderError as exc:
            return f"(logs unavailable: {exc.message})"

    # -- attach by URL -----------------------------------------------------------------------
    async def attach_url(self, url: str, name: str | None = None) -> Runtime:
        url = url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise StudioError("Enter the server's http:// URL.")
        health = await check_health(url)
        if not health.ok:
            raise StudioError(f"{url} does not answer /health: {health.error}")
        meta = await _metadata(url)
        rt = Runtime(id="u" + uuid.uuid4().hex[:11], name=name or meta.get("name") or url, provider="url",
                     target=url, status="attached", base_url=url)
        with self._lock:
            self.runtimes[rt.id] = rt
        self._save_attached([r for r in self.runtimes.values() if r.provider == "url"])
        return rt

    def _save_attached(self, items: list[Runtime]) -> None:
        data = [{"id": r.id, "name": r.name, "url": r.base_url, "at": r.started_at} for r in items]
        self._attached_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._attached_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self._attached_path)

    def _known_ids(self) -> dict[str, str]:
        try:
            data = json.loads(self._ids_path.read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _remember_id(self, runtime_id: str, studio_id: str) -> None:
        """Keep the studio's id of a started runtime so a restarted studio re-adopts it under the
        same id (saved links keep working); at most the 500 latest."""
        with self._lock:
            ids = self._known_ids()
            ids[runtime_id] = studio_id
            ids = dict(list(ids.items())[-500:])
            self._ids_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._ids_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(ids))
            os.replace(tmp, self._ids_path)

    # -- re-adoption after a restart -----------------------------------------------------------
    def readopt(self, kinds: tuple[str, ...]) -> None:
        """Find the runtimes this project started before (records / labels): living ones come back
        as running, dead ones are listed as exited until forgotten."""
        for kind in kinds:
            cls = PROVIDERS[kind]
            try:
                found = cls.list_runtimes(project=self.settings.project, **self._class_options(kind))
            except ProviderError as exc:
                log.warning("could not list %s runtimes: %s", kind, exc.message)
                continue
            for info in found:
                try:
                    handle = cls.attach(info.runtime_id, **self._class_options(kind))
                except ProviderError as exc:
                    log.warning("could not re-adopt %s: %s", info.runtime_id, exc.message)
                    continue
                alive = info.status in (RuntimeStatus.RUNNING, RuntimeStatus.STARTING)
                known = self._known_ids().get(info.runtime_id)  # the id its links were made with
                rt = Runtime(id=known or info.runtime_id[:12], name=info.env_name or info.runtime_id, provider=kind,
                             target=info.env_name or "", status="running" if alive else "exited",
                             base_url=info.base_url or handle.base_url, started_at=info.started_at or time.time(),
                             adopted=True, handle=handle,
                             placement=_placement(info.extra.get("node_id"), info.extra.get("node_ip")))
                if not alive:
                    rt.error = "found dead after the studio restarted"
                self.runtimes[rt.id] = rt
        for item in _read_json_list(self._attached_path):
            rt = Runtime(id=str(item.get("id")), name=str(item.get("name")), provider="url",
                         target=str(item.get("url")), status="attached", base_url=item.get("url"),
                         started_at=float(item.get("at") or time.time()), adopted=True)
            self.runtimes[rt.id] = rt

    def release(self) -> None:
        """At shut-down: leave the envs running (they are re-adopted on the next start)."""
        self.runtimes.clear()

    # -- health ---------------------------------------------------------------------------------
    async def health_all(self) -> dict[str, Health]:
        """``/health`` of every live runtime, concurrently; exited processes are marked."""
        live = self.live()
        results = await asyncio.gather(*(check_health(r.base_url or "") for r in live))
        for rt in live:
            if rt.handle is not None and rt.provider in ("process", "ray"):
                status = await asyncio.to_thread(_safe_status, rt.handle)
                if status is RuntimeStatus.EXITED:
                    rt.status, rt.error = "exited", _GONE[rt.provider]
                    rt.log_tail = rt.handle.safe_logs()
        return {rt.id: h for rt, h in zip(live, results, strict=True)}


def _placement(node_id: str | None, node_ip: str | None) -> str:
    return f"node {node_id[:8]} ({node_ip})" if node_id else ""


def _safe_status(handle: ContainerProvider) -> RuntimeStatus | None:
    try:
        return handle.status()
    except ProviderError:
        return None


def _read_json_list(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


async def check_health(base_url: str) -> Health:
    try:
        async with httpx.AsyncClient(timeout=HEALTH_TIMEOUT_S, trust_env=False) as http:
            resp = await http.get(base_url.rstrip("/") + "/health")
    except httpx.HTTPError as exc:
        return Health(False, error=type(exc).__name__)
    if resp.status_code != 200:
        return Health(False, error=f"HTTP {resp.status_code}")
    try:
        sessions = resp.json().get("sessions") or {}
    except (ValueError, AttributeError):
        sessions = {}
    return Health(True, sessions.get("active"), sessions.get("max"))


async def _metadata(base_url: str) -> dict[str, Any]:
    try:
        async with httpx.AsyncClient(timeout=HEALTH_TIMEOUT_S, trust_env=False) as http:
            data = (await http.get(base_url + "/metadata")).json()
    except (httpx.HTTPError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
