"""OpenEnv Studio: agentic RL execution environments, wire-compatible with OpenEnv.

As in the published package, the top level names its client entry points and loads them on
first use (``from openenv import AutoEnv, GenericEnvClient``), so ``import openenv`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

__all__ = ["AutoAction", "AutoEnv", "GenericAction", "GenericEnvClient", "SyncEnvClient"]

_LAZY = {
    "AutoAction": "openenv.auto",
    "AutoEnv": "openenv.auto",
    "GenericAction": "openenv.core.generic_client",
    "GenericEnvClient": "openenv.core.generic_client",
    "SyncEnvClient": "openenv.core.sync_client",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'openenv' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
