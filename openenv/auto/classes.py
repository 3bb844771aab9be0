"""The typed client and action classes of a resolved environment, found by convention.

An env package ``pkg`` (``openenv.envs.echo``, an installed ``echo_env``, a directory with an
``__init__.py``) holds ``pkg.client`` with an ``EnvClient`` subclass and ``pkg.models`` with an
``Action`` subclass (0.10's layout); ``<Name>Env``/``<Name>Action`` win when there are several.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from openenv.auto.resolve import EnvTarget
from openenv.core.errors import TargetError

__all__ = ["action_class", "client_class"]


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_") if part)


def _import(target: EnvTarget, suffix: str) -> Any | None:
    if target.package is None:
        return None
    if target.path and target.path not in sys.path:
        sys.path.insert(0, target.path)
    try:
        return importlib.import_module(f"{target.package}.{suffix}")
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == f"{target.package}.{suffix}" or f"{target.package}.{suffix}".startswith(exc.name)):
            return None  # the package has no such module
        raise TargetError(f"{target.target}: {target.package}.{suffix} does not import: {exc}") from exc


def _pick(module: Any, base: type, preferred: str) -> type | None:
    found = [obj for _, obj in inspect.getmembers(module, inspect.isclass)
             if issubclass(obj, base) and obj is not base and obj.__module__ == module.__name__
             and not inspect.isabstract(obj)]  # fmt: skip
    for cls in found:
        if cls.__name__ == preferred:
            return cls
    return found[0] if len(found) == 1 else None


def client_class(target: EnvTarget) -> type | None:
    """The env's own typed client class, or ``None`` (use ``GenericEnvClient``)."""
    from openenv.core.env_client import EnvClient

    module = _import(target, "client")
    return _pick(module, EnvClient, f"{_pascal(target.name)}Env") if module is not None else None


def action_class(target: EnvTarget) -> type:
    """The env's action class; ``TargetError`` when its code is not here (a URL, an image)."""
    if target.package is None:
        raise TargetError(f"{target.target}: a {target.kind} carries no action class here; send dicts "
                          "(GenericEnvClient / GenericAction), or name the env's package or directory")  # fmt: skip
    from openenv.core.env_server.types import Action

    for suffix in ("models", "client"):
        module = _import(target, suffix)
        cls = _pick(module, Action, f"{_pascal(target.name)}Action") if module is not None else None
        if cls is not None:
            return cls
    if _is_mcp(target):
        from openenv.core.env_server.mcp_types import CallToolAction

        return CallToolAction  # an MCP env's actions are tool calls (ListToolsAction lists them)
    raise TargetError(f"{target.target}: no Action subclass in {target.package}.models")


def _is_mcp(target: EnvTarget) -> bool:
    """An MCP env: its client is an ``MCPClientBase`` or its server code builds an ``MCPEnvironment``
    (read as text: importing the server would import fastmcp)."""
    from openenv.core.mcp_client import MCPClientBase

    module = _import(target, "client")
    if module is not None and _pick(module, MCPClientBase, f"{_pascal(target.name)}Env") is not None:
        return True
    spec = importlib.util.find_spec(target.package) if target.package else None
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    return any("MCPEnvironment" in f.read_text(errors="replace") for root in roots
               for f in (*root.glob("server/*.py"), *root.glob("*.py")))  # fmt: skip
