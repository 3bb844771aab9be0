"""Resolve what ``openenv serve`` serves: a bundled env name, ``module:app`` or an env directory."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path
from typing import Any

__all__ = ["BUNDLED_PREFIX", "bundled_envs", "load_app", "resolve_target"]

BUNDLED_PREFIX = "openenv.envs"


class TargetError(ValueError):
    """The target could not be found or imported."""


def bundled_envs() -> list[str]:
    """Names of the environments shipped in ``openenv.envs`` (those with an ``app`` module)."""
    import openenv.envs as pkg

    names = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.ispkg and (Path(pkg.__path__[0]) / info.name / "app.py").exists():
            names.append(info.name)
    return sorted(names)


def resolve_target(target: str) -> tuple[str, str | None]:
    """Return ``(module:attr, sys.path entry or None)`` for a target string."""
    path = Path(target)
    if path.is_dir():
        path = path.resolve()
        for rel in ("server/app.py", "app.py"):
            if (path / rel).exists():
                module = rel[:-3].replace("/", ".")
                if (path / "__init__.py").exists():
                    return f"{path.name}.{module}:app", str(path.parent)
                return f"{module}:app", str(path)
        raise TargetError(f"{target}: no app.py or server/app.py in this directory")
    if ":" in target:
        return target, None
    if target in bundled_envs():
        return f"{BUNDLED_PREFIX}.{target}.app:app", None
    known = ", ".join(bundled_envs()) or "none"
    raise TargetError(f"Unknown environment {target!r}: use a bundled name ({known}), module:app or a directory")


def load_app(target: str) -> Any:
    """Import and return the ASGI app a target names."""
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
