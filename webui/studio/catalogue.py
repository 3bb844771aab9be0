"""What can be launched: bundled envs, env directories and ``module:app`` paths the user added,
and local Docker images carrying OpenEnv labels. User additions persist in ``catalogue.json``.

A local catalog snapshot (0.10's metadata-only format, ``openenv catalog build``) can be added
too: its environments are listed to browse (name, description, source, license), not launched."""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from openenv.auto import TargetError, bundled_envs, resolve_target
from openenv.core.containers.runtime import ProviderError
from openenv.core.containers.runtime.docker_engine import engine_client, translate_docker_errors
from openenv.importers import LIVE_PREFIXES
from webui.studio.errors import CatalogueError, NotFoundError
from webui.studio.ray_status import RayStatus, probe_ray

__all__ = ["Catalogue", "DockerStatus", "Entry", "probe_docker"]

IMAGE_LABEL = "io.openenv.build-hash"
_MODULE_APP = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
MAX_TARGET_CHARS = 1024


def _is_dir(path: Path) -> bool:
    """``path.is_dir()``, false for a name the system refuses (too long, a NUL byte...)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _importable_top(target: str) -> bool:
    """Whether a ``module:app`` target's top-level package exists (found, not imported) in the
    working directory, where a launch runs, or on ``sys.path``."""
    top = target.split(":", 1)[0].split(".", 1)[0]
    try:
        return importlib.machinery.PathFinder.find_spec(top, [os.getcwd(), *sys.path]) is not None or (
            top in sys.builtin_module_names)
    except (ImportError, ValueError, OSError):
        return False


def _is_file(path: Path) -> bool:
    """``path.is_file()``, false for a name the system refuses."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


_DOCKER_TTL_S = 15.0


@dataclass(frozen=True)
class DockerStatus:
    """Whether the Docker engine (and a swarm) can be used, and if not, why."""

    available: bool
    swarm: bool = False
    reason: str = ""
    images: tuple[tuple[str, str], ...] = ()  # (tag, short id)
    ray: RayStatus = RayStatus(False)  # the Ray cluster's status rides along (probed with Docker)


def probe_docker(enabled: bool, docker_host: str | None) -> DockerStatus:
    """Ping the engine once; list images with OpenEnv labels."""
    if not enabled:
        return DockerStatus(False, reason="Docker is turned off (OPENENV_STUDIO_DOCKER=false).")
    try:
        client = engine_client(docker_host, timeout=5)
    except ProviderError as exc:
        return DockerStatus(False, reason=exc.message)
    try:
        with translate_docker_errors("probing Docker"):
            swarm = client.info().get("Swarm", {}).get("LocalNodeState") == "active"
            images = client.images.list(filters={"label": IMAGE_LABEL})
    except ProviderError as exc:
        return DockerStatus(False, reason=exc.message)
    finally:
        client.close()
    tags = sorted((tag, image.short_id.split(":")[-1]) for image in images for tag in image.tags)
    return DockerStatus(True, swarm=swarm, images=tuple(tags))


@dataclass(frozen=True)
class Entry:
    """One launchable thing; ``key`` is URL-safe and stable."""

    key: str
    kind: str  # bundled | directory | module | image | imported (verifiers:/ors:) | snapshot | catalog
    target: str
    providers: tuple[str, ...]
    detail: str = ""
    title: str = ""  # a catalog entry's display name

    @property
    def name(self) -> str:
        if self.title:
            return self.title
        if self.kind in ("directory", "snapshot"):
            return Path(self.target).name
        return self.target


def _key(kind: str, target: str) -> str:
    return kind[0] + hashlib.sha256(f"{kind}:{target}".encode()).hexdigest()[:11]


class Catalogue:
    """Launchable entries; Docker facts cached for a few seconds."""

    def __init__(self, data_dir: Path, *, docker: bool, docker_host: str | None,
                 ray_address: str | None = None) -> None:
        self.path = data_dir / "catalogue.json"
        self.docker_enabled = docker
        self.docker_host = docker_host
        self.ray_address = ray_address
        self._lock = threading.Lock()
        self._docker: tuple[float, DockerStatus] | None = None

    def docker(self, *, fresh: bool = False) -> DockerStatus:
        cached = self._docker
        if cached is None or fresh or time.monotonic() - cached[0] > _DOCKER_TTL_S:
            status = probe_docker(self.docker_enabled, self.docker_host)
            status = replace(status, ray=probe_ray(self.ray_address))
            self._docker = (time.monotonic(), status)
            return status
        return cached[1]

    def _user_targets(self) -> list[dict[str, str]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return []
        return [d for d in data if isinstance(d, dict) and "target" in d] if isinstance(data, list) else []

    def _save(self, items: list[dict[str, str]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(items, indent=1))
        os.replace(tmp, self.path)

    def entries(self, docker: DockerStatus | None = None) -> list[Entry]:
        out = [Entry(_key("bundled", n), "bundled", n, ("process",), "bundled with openenv")
               for n in bundled_envs()]
        for item in self._user_targets():
            kind, target = item.get("kind", "module"), item["target"]
            if kind == "snapshot":
                out += _snapshot_entries(target)
                continue
            out.append(Entry(_key(kind, target), kind, target, ("process",), item.get("detail", "")))
        docker = docker or DockerStatus(False)
        if docker.available:
            kinds = ("docker", "swarm") if docker.swarm else ("docker",)
            out += [Entry(_key("image", tag), "image", tag, kinds, f"image {short}") for tag, short in docker.images]
        if docker.ray.available:  # Ray serves every kind of entry (images on nodes with Docker)
            out = [replace(e, providers=(*e.providers, "ray")) if e.providers else e for e in out]
        return out

    def get(self, key: str, docker: DockerStatus | None = None) -> Entry:
        for entry in self.entries(docker):
            if entry.key == key:
                return entry
        raise NotFoundError(f"no catalogue entry {key!r}", what="entry")

    def launchable(self, key: str, docker: DockerStatus | None = None) -> Entry:
        """``get``, refusing what cannot be launched (a catalog snapshot's metadata-only rows)."""
        entry = self.get(key, docker)
        if not entry.providers:
            raise CatalogueError(f"{entry.name} is metadata from a catalog snapshot: there is nothing to launch")
        return entry

    def add(self, target: str) -> Entry:
        """Add an env directory, ``module:app`` path or live ``verifiers:``/``ors:`` target (checked, not imported)."""
        target = target.strip()
        if not target:
            raise CatalogueError("Enter an env directory, a module:app path or verifiers:MODULE.")
        if len(target) > MAX_TARGET_CHARS:
            raise CatalogueError(f"A target is at most {MAX_TARGET_CHARS} characters (this one has {len(target)}).")
        path = Path(target).expanduser()
        if target.startswith(LIVE_PREFIXES):
            from openenv.importers.live import parse_args, parse_target

            try:
                kind_name, _, args = parse_target(target)
                if kind_name == "verifiers":
                    parse_args(args)
            except TargetError as exc:
                raise CatalogueError(str(exc)) from exc
            kind = "imported"
        elif _is_file(path) and path.suffix == ".json":
            from openenv.discovery import CatalogError, load_catalog

            try:
                load_catalog(path)
            except CatalogError as exc:
                raise CatalogueError(f"{path.name}: {exc}") from exc
            kind, target = "snapshot", str(path.resolve())
        elif _is_dir(path):
            try:
                resolve_target(str(path))
            except TargetError as exc:
                raise CatalogueError(str(exc)) from exc
            kind, target = "directory", str(path.resolve())
        elif _MODULE_APP.match(target):
            if not _importable_top(target):
                raise CatalogueError(f"{target!r}: no module {target.split('.')[0].split(':')[0]!r} can be found from "
                                     f"{os.getcwd()} or the studio's Python path.")
            kind = "module"
        else:
            raise CatalogueError(f"{target!r} is neither an env directory, a module:app path, verifiers:/ors:MODULE "
                                 "nor a catalog snapshot (.json).")
        with self._lock:
            items = self._user_targets()
            if not any(i["target"] == target for i in items):
                items.append({"kind": kind, "target": target, "added_at": str(time.time())})
                self._save(items)
        return Entry(_key(kind, target), kind, target, () if kind == "snapshot" else ("process",))

    def remove(self, key: str) -> None:
        with self._lock:
            items = self._user_targets()
            kept = [i for i in items if _key(i.get("kind", "module"), i["target"]) != key]
            if len(kept) == len(items):
                raise NotFoundError(f"no user-added entry {key!r}", what="entry")
            self._save(kept)

    @staticmethod
    def as_dict(entry: Entry) -> dict[str, Any]:
        return {"key": entry.key, "kind": entry.kind, "target": entry.target, "providers": list(entry.providers)}


def _snapshot_entries(path: str) -> list[Entry]:
    """A snapshot's row, then one row per environment in it (metadata only: nothing to launch)."""
    from openenv.discovery import CatalogError, load_catalog

    head = Entry(_key("snapshot", path), "snapshot", path, ())
    try:
        snapshot = load_catalog(path)
    except CatalogError as exc:
        return [replace(head, detail=f"catalog snapshot, unreadable now: {exc}")]
    rows = [replace(head, detail=f"catalog snapshot of {snapshot.source.id}@{snapshot.source.revision[:12]}, "
                                 f"{len(snapshot.entries)} environments (metadata only)")]
    for e in snapshot.entries:
        card = e.data
        detail = (f"{card.description} · {card.source.uri} {card.source.path}@{card.source.revision[:12]} · "
                  f"license {card.license}")
        rows.append(Entry(_key("catalog", e.identifier), "catalog", e.identifier, (), detail, title=e.display_name))
    return rows
