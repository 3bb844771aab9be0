"""The one resolver: what a target string names, for ``openenv serve``, the studio catalogue and
``AutoEnv.from_env``.

A target is, tried in this order: a URL (a running server); an env directory (``openenv.yaml``
manifest, ``server/app.py`` or ``app.py``); ``owner/repo`` (a Hugging Face Hub name: the hub must
be reachable); ``module:app``; ``openenv.envs.<name>`` (a bundled env, always); an installed env
package (a distribution named ``openenv-<name>``; ``echo``, ``echo-env``, ``echo_env`` name the
same one); a bundled env name; a local Docker image carrying OpenEnv labels.

An installed package wins over a bundled env of the same name (you installed it on purpose, and
0.10 code naming ``echo`` means that package); the bundled one stays reachable as
``openenv.envs.echo``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import pkgutil
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv.core.errors import HubUnavailableError, TargetError
from openenv.importers import LIVE_PREFIXES

__all__ = [
    "BUNDLED_PREFIX",
    "EnvTarget",
    "TargetError",
    "bundled_envs",
    "env_names",
    "installed_env_packages",
    "load_app",
    "read_manifest",
    "resolve",
    "resolve_target",
]

BUNDLED_PREFIX = "openenv.envs"
MANIFEST = "openenv.yaml"
IMAGE_LABEL_PREFIX = "io.openenv"
HUB_URL = os.environ.get("OPENENV_HUB_URL", "https://huggingface.co")
_URL_SCHEMES = ("http://", "https://", "ws://", "wss://")
_MODULE_APP = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
_NOT_ENV_PACKAGES = frozenset(("openenv", "openenv-core", "openenv-studio"))


@dataclass(frozen=True)
class EnvTarget:
    """What a target names. ``app`` (``module:attr``, importable with ``path`` on ``sys.path``) is
    set for what can be served here; ``url`` for a running server; ``image`` for a Docker image;
    ``package`` is the Python package holding the env's client and models, when known."""

    kind: str  # url | directory | module | bundled | package | image
    target: str
    name: str
    app: str | None = None
    path: str | None = None
    url: str | None = None
    image: str | None = None
    package: str | None = None
    manifest: Mapping[str, Any] = field(default_factory=dict)

    @property
    def serve_target(self) -> str:
        """What a process provider or ``openenv serve`` is given to serve it."""
        if self.kind in ("directory", "bundled", "imported"):
            return self.name if self.kind == "bundled" else self.target
        if self.app is None:
            raise TargetError(f"{self.target}: a {self.kind} is not served from here")
        return self.app


def bundled_envs() -> list[str]:
    """Names of the environments shipped in ``openenv.envs`` (those with an ``app`` module)."""
    import openenv.envs as pkg

    root = Path(pkg.__path__[0])
    return sorted(i.name for i in pkgutil.iter_modules(pkg.__path__) if i.ispkg and (root / i.name / "app.py").exists())


def _env_key(name: str) -> str:
    """``echo``, ``echo-env``, ``echo_env`` → ``echo``."""
    return re.sub(r"[-_]env$", "", name.strip()).replace("-", "_")


def read_manifest(path: Path) -> dict[str, Any]:
    """The ``openenv.yaml`` manifest (0.10's published format) of a directory, ``{}`` if none."""
    file = path / MANIFEST
    if not file.is_file():
        return {}
    import yaml

    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TargetError(f"{file}: not a valid manifest: {exc}") from None
    if not isinstance(data, dict):
        raise TargetError(f"{file}: the manifest must be a mapping (name, app, ...)")
    return data


def _directory(target: str, path: Path) -> EnvTarget:
    root = path.resolve()
    manifest = read_manifest(root)
    package_dir = (root / "__init__.py").exists()
    name = str(manifest.get("name") or root.name)
    declared = manifest.get("app")
    candidates = [declared] if isinstance(declared, str) and _MODULE_APP.match(declared) else []
    candidates += [f"{rel[:-3].replace('/', '.')}:app" for rel in ("server/app.py", "app.py")]
    for spec in candidates:
        module, _, attr = spec.partition(":")
        if (root / (module.replace(".", "/") + ".py")).exists():
            if package_dir:
                return EnvTarget("directory", target, name, app=f"{root.name}.{module}:{attr}", path=str(root.parent),
                                 package=root.name, manifest=manifest)  # fmt: skip
            return EnvTarget("directory", target, name, app=spec, path=str(root), manifest=manifest)
    raise TargetError(f"{target}: no app.py or server/app.py in this directory" +
                      (f" (the manifest's app {declared!r} is not there)" if declared else ""))  # fmt: skip


_INSTALLED_CACHE: dict[tuple, dict[str, tuple[str, str]]] = {}


def _path_stamp() -> tuple:
    """What decides the installed set: ``sys.path`` and each entry's mtime (an install changes it)."""
    stamp = []
    for entry in sys.path:
        try:
            stamp.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            stamp.append((entry, None))
    return tuple(stamp)


def installed_env_packages() -> dict[str, tuple[str, str]]:
    """Installed env packages: ``{env key: (distribution, module)}`` for ``openenv-<name>`` ones."""
    stamp = _path_stamp()
    if stamp not in _INSTALLED_CACHE:
        _INSTALLED_CACHE.clear()
        _INSTALLED_CACHE[stamp] = _scan_installed()
    return dict(_INSTALLED_CACHE[stamp])


def _scan_installed() -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for dist in importlib.metadata.distributions():
        dist_name = (dist.metadata["Name"] or "").lower()
        if not dist_name.startswith("openenv-") or dist_name in _NOT_ENV_PACKAGES:
            continue
        module = dist_name[len("openenv-"):].replace("-", "_")
        if importlib.util.find_spec(module) is not None:
            found.setdefault(_env_key(module), (dist.metadata["Name"], module))
    return found


def _package(target: str, key: str, dist: str, module: str) -> EnvTarget:
    spec = importlib.util.find_spec(module)
    root = Path(next(iter(spec.submodule_search_locations or []), "")) if spec else Path()
    manifest = read_manifest(root) if root.is_dir() else {}
    app = manifest.get("app") if isinstance(manifest.get("app"), str) else None
    for rel in ([app] if app else []) + ["server.app:app", "app:app"]:
        sub, _, attr = rel.partition(":")
        if (root / (sub.replace(".", "/") + ".py")).exists():
            return EnvTarget("package", target, key, app=f"{module}.{sub}:{attr or 'app'}", package=module,
                             manifest=manifest)  # fmt: skip
    raise TargetError(f"{target}: package {dist} ({module}) has no server/app.py to serve")


def _hub(target: str) -> EnvTarget:
    """``owner/repo``: only the hub can say what it is; say plainly when it cannot be reached."""
    import httpx

    try:
        httpx.head(f"{HUB_URL}/spaces/{target}", timeout=3.0, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise HubUnavailableError(
            f"{target!r} names a Hugging Face Hub environment, but the hub ({HUB_URL}) cannot be reached "
            f"from here ({type(exc).__name__}). Clone the Space and pass its directory, run its image "
            "(docker_image=...), or pass base_url= of a server already running it.",
            target=target,
        ) from None
    raise HubUnavailableError(
        f"{target!r} names a Hugging Face Hub environment; installing from the hub is not supported by this "
        "build. Clone the Space and pass its directory, or pass base_url= of a server running it.",
        target=target,
    )


def _image(target: str) -> EnvTarget | None:
    """A local Docker image with OpenEnv labels tagged ``target`` (``:latest`` implied), if any."""
    try:
        from openenv.core.containers.runtime import ProviderError
        from openenv.core.containers.runtime.docker_engine import engine_client
    except ImportError:  # pragma: no cover - docker is a dependency
        return None
    try:
        client = engine_client(None, timeout=3)
    except ProviderError:
        return None
    try:
        import docker.errors

        try:
            image = client.images.get(target if ":" in target.rsplit("/", 1)[-1] else f"{target}:latest")
        except (docker.errors.ImageNotFound, docker.errors.APIError):
            return None
        labels = image.labels or {}
        if not any(k.startswith(IMAGE_LABEL_PREFIX) for k in labels):
            return None
        name = labels.get(f"{IMAGE_LABEL_PREFIX}.env") or target.rsplit("/", 1)[-1].split(":")[0]
        return EnvTarget("image", target, name, image=target)
    finally:
        client.close()


def resolve(target: str, *, docker: bool = True) -> EnvTarget:
    """What ``target`` names (see the module docstring); ``TargetError`` when nothing matches."""
    target = target.strip()
    if not target:
        raise TargetError("an empty target names nothing: give an env name, directory, module:app, image or URL")
    if target.startswith(_URL_SCHEMES):
        return EnvTarget("url", target, target, url=target.rstrip("/"))
    if target.startswith(LIVE_PREFIXES):  # verifiers:/ors: environments served live (openenv.importers)
        return EnvTarget("imported", target, target.split(":")[1].rstrip("/").rsplit("/", 1)[-1] or target)
    path = Path(target).expanduser()
    if path.is_dir():
        return _directory(target, path)
    if _HUB_NAME.match(target) and not path.exists():
        return _hub(target)
    if _MODULE_APP.match(target):
        module = target.partition(":")[0]
        try:
            importable = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            importable = False
        if not importable and docker and (found := _image(target)) is not None:
            return found
        return EnvTarget("module", target, module.split(".")[0], app=target)  # importing it tells what is wrong
    bundled = bundled_envs()
    if target.startswith(BUNDLED_PREFIX + ".") and target[len(BUNDLED_PREFIX) + 1:] in bundled:
        return _bundled(target, target[len(BUNDLED_PREFIX) + 1:])
    key = _env_key(target)
    installed = installed_env_packages()
    if key in installed:  # an installed package wins over a bundled env of the same name
        return _package(target, key, *installed[key])
    if key in bundled:
        return _bundled(target, key)
    if docker and (found := _image(target)) is not None:
        return found
    known = ", ".join(env_names()) or "none"
    raise TargetError(f"Unknown environment {target!r}: use an env name ({known}), a directory, module:app, "
                      "a local OpenEnv image or a URL")  # fmt: skip


def _bundled(target: str, key: str) -> EnvTarget:
    return EnvTarget("bundled", target, key, app=f"{BUNDLED_PREFIX}.{key}.app:app", package=f"{BUNDLED_PREFIX}.{key}")


def env_names() -> list[str]:
    """Every env name found here, once each: installed packages by their key, bundled envs by
    theirs, or as ``openenv.envs.<name>`` when an installed package of that name shadows them."""
    installed = installed_env_packages()
    bundled = [f"{BUNDLED_PREFIX}.{name}" if name in installed else name for name in bundled_envs()]
    return sorted(set(installed) | set(bundled))


def resolve_target(target: str) -> tuple[str, str | None]:
    """``(module:attr, sys.path entry or None)`` to serve ``target`` in this process."""
    found = resolve(target, docker=False)
    if found.kind == "imported":
        raise TargetError(f"{target}: a live {target.split(':')[0]} target is served by load_app, not imported")
    if found.app is None:
        raise TargetError(f"{target}: a {found.kind} cannot be served from this process")
    return found.app, found.path


def load_app(target: str) -> Any:
    """Import and return the ASGI app a target names."""
    if target.strip().startswith(LIVE_PREFIXES):
        from openenv.importers.live import build_app

        return build_app(target.strip())
    spec, extra_path = resolve_target(target)
    if extra_path and extra_path not in sys.path:
        sys.path.insert(0, extra_path)
    module_name, _, attr = spec.partition(":")
    try:
        if extra_path and "." not in module_name:
            module = _import_file(Path(extra_path) / f"{module_name}.py")
        else:
            module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(f"Cannot import {module_name!r}: {exc}") from exc
    app = getattr(module, attr or "app", None)
    if app is None:
        raise TargetError(f"{module_name!r} has no attribute {attr or 'app'!r}")
    return app


def _import_file(path: Path) -> Any:
    """Import a directory's top-level ``app.py`` under a name unique to its path."""
    name = "openenv_user_app_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
