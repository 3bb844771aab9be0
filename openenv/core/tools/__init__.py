"""Tools for environments, at 0.10's import path ``openenv.core.tools``.

``GitServerClient``/``RepoInfo`` (a Gitea server's repositories cloned into a local workspace; needs
only ``git``) and ``PyExecutor`` (Python code run by smolagents' ``LocalPythonExecutor``: the
``tools`` extra). Without smolagents, ``PyExecutor`` is None, as on 0.10; smolagents is imported
only when ``PyExecutor`` is first looked up.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from .git_server_client import GitServerClient, RepoInfo

__all__ = ["PyExecutor", "GitServerClient", "RepoInfo"]


def __getattr__(name: str) -> Any:
    if name != "PyExecutor":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = None
    if importlib.util.find_spec("smolagents") is not None:
        from .local_python_executor import PyExecutor as value
    globals()["PyExecutor"] = value
    return value
