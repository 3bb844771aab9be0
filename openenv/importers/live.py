"""``openenv serve verifiers:MODULE[:ARGS]`` and ``openenv serve ors:MODULE[:CLASS]``: no generated code.

``MODULE`` is an importable module name, a ``.py`` file or a source directory (searched as
``openenv import`` does). ``ARGS`` are ``load_environment``'s keyword arguments: a JSON object
(``{"n": 3}``) or ``key=value`` pairs separated by commas (values read as JSON when they parse).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import signal
import sys
from pathlib import Path
from typing import Any

from openenv.core.errors import TargetError

from . import LIVE_PREFIXES

__all__ = ["build_app", "parse_args", "parse_target"]

_INSTALL = {"verifiers": "pip install 'openenv[verifiers]'", "ors": "pip install 'openenv[ors]'"}


def parse_args(text: str) -> dict[str, Any]:
    """``ARGS`` of a live target as keyword arguments."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TargetError(f"the arguments {text!r} are not a JSON object: {exc}") from None
        if not isinstance(value, dict):
            raise TargetError(f"the arguments {text!r} are not a JSON object")
        return value
    out: dict[str, Any] = {}
    for pair in text.split(","):
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise TargetError(f"argument {pair!r}: write key=value (or a JSON object)")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def parse_target(target: str) -> tuple[str, str, str]:
    """``(kind, module, rest)`` of ``verifiers:MODULE[:ARGS]`` / ``ors:MODULE[:CLASS]``."""
    kind, _, spec = target.partition(":")
    if f"{kind}:" not in LIVE_PREFIXES:
        raise TargetError(f"{target!r} is not a live target ({', '.join(p + 'MODULE' for p in LIVE_PREFIXES)})")
    module, _, rest = spec.partition(":")
    if not module:
        raise TargetError(f"{target!r}: name the module, e.g. {kind}:my_env")
    return kind, module, rest


def _import_module(kind: str, spec: str) -> Any:
    """Import ``spec`` (module name, .py file, or source directory searched by detection)."""
    path = Path(spec).expanduser()
    if path.is_dir():
        from .detect import DetectionError, select

        try:
            found = select(path, kind)
        except DetectionError as exc:
            raise TargetError(str(exc)) from None
        root = str(path.resolve())
        if root not in sys.path:
            sys.path.insert(0, root)
        return _import_module(kind, found.module_path or path.name) if found.module_path else _import_file(path / "__init__.py")
    if path.suffix == ".py":
        if not path.is_file():
            raise TargetError(f"{spec}: no such file")
        return _import_file(path)
    try:
        if importlib.util.find_spec(spec.split(".")[0]) is None:
            raise TargetError(f"{kind}:{spec}: no module named {spec!r} (an installed env package, a .py file "
                              "or a source directory)")  # fmt: skip
        return importlib.import_module(spec)
    except ImportError as exc:
        hint = f" ({_INSTALL[kind]})" if getattr(exc, "name", "") in ("verifiers", "openreward") else ""
        raise TargetError(f"Cannot import {spec!r}: {exc}{hint}") from exc


def _import_file(path: Path) -> Any:
    parent = str(path.resolve().parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    name = path.stem if path.name != "__init__.py" else path.parent.name
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise TargetError(f"Cannot import {path}: {exc}") from exc


def _require(kind: str) -> None:
    module = "verifiers" if kind == "verifiers" else "openreward"
    if importlib.util.find_spec(module) is None:
        raise TargetError(f"serving {kind}: targets needs {module}: {_INSTALL[kind]}")


def load_verifiers(spec: str, args: dict[str, Any]) -> Any:
    """Build the verifiers environment (in this thread: verifiers installs signal handlers, kept out)."""
    module = _import_module("verifiers", spec)
    loader = getattr(module, "load_environment", None)
    if not callable(loader):
        raise TargetError(f"verifiers:{spec}: the module has no load_environment()")
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        env = loader(**args)
        if inspect.isawaitable(env):
            from .verifiers_env import run

            env = run(env)
    except TypeError as exc:
        raise TargetError(f"verifiers:{spec}: load_environment({', '.join(args)}) failed: {exc}") from exc
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
    return env


def ors_class(spec: str, class_name: str) -> type:
    """The ORS ``Environment`` subclass ``class_name`` of the module (the only one when not named)."""
    from openreward.environments import Environment as ORSEnvironment

    module = _import_module("ors", spec)
    found = [v for v in vars(module).values()
             if isinstance(v, type) and issubclass(v, ORSEnvironment) and v is not ORSEnvironment
             and v.__module__ == module.__name__]  # fmt: skip
    if class_name:
        found = [c for c in found if c.__name__ == class_name]
    if len(found) != 1:
        names = ", ".join(c.__name__ for c in found) or "none"
        raise TargetError(f"ors:{spec}: expected one ORS Environment subclass{f' named {class_name}' if class_name else ''}"
                          f" in the module, found {names}" + ("" if class_name else "; name it: ors:MODULE:CLASS"))
    return found[0]


def build_app(target: str) -> Any:
    """The ASGI app serving a live ``verifiers:``/``ors:`` target."""
    from openenv.core.env_server.http_server import create_app

    kind, spec, rest = parse_target(target)
    _require(kind)
    name = Path(spec).stem if spec.endswith(".py") else Path(spec).name.split(".")[-1]
    if kind == "verifiers":
        from .verifiers_env import VerifiersAction, VerifiersEnvironment, VerifiersObservation

        vf_env = load_verifiers(spec, parse_args(rest))

        def make() -> VerifiersEnvironment:
            return VerifiersEnvironment(vf_env, source=target)

        make.__name__ = name
        return create_app(make, VerifiersAction, VerifiersObservation, env_name=name, max_concurrent_envs=8)
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

    from .ors_env import ORSEnvironment

    cls = ors_class(spec, rest.strip())

    def make_ors() -> ORSEnvironment:
        return ORSEnvironment(cls)

    make_ors.__name__ = name
    return create_app(make_ors, CallToolAction, CallToolObservation, env_name=name, max_concurrent_envs=8)
