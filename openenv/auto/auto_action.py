"""``AutoAction``: the action class of an environment named any way the resolver understands.

    EchoAction = AutoAction.from_env("echo")
    Action = AutoAction.from_env("./my_mcp_env")     # an MCP env: CallToolAction
    AutoAction.get_action_info("echo")               # 0.10's dict
"""

from __future__ import annotations

from typing import Any

from openenv.auto import info as _info
from openenv.auto.classes import action_class
from openenv.auto.resolve import resolve

__all__ = ["AutoAction"]


class AutoAction:
    """Factory: ``AutoAction.from_env(target)`` is the env's action class."""

    def __init__(self) -> None:
        raise TypeError(
            "AutoAction is a factory class and should not be instantiated directly. "
            "Use AutoAction.from_hub() or AutoAction.from_env() instead."
        )

    @classmethod
    def from_env(cls, target: str, skip_install: bool = False) -> type:
        """The action class of the env ``target`` names (its code must be here); ``GenericAction``
        with ``skip_install=True``. An MCP env (tools, no Action subclass of its own) gives
        ``CallToolAction``."""
        if skip_install:
            from openenv.core.generic_client import GenericAction

            return GenericAction
        return action_class(resolve(target, docker=False))

    from_name = from_env

    @classmethod
    def from_hub(cls, env_name: str, skip_install: bool = False) -> type:
        """0.10's alias of ``from_env``."""
        return cls.from_env(env_name, skip_install=skip_install)

    @classmethod
    def get_action_info(cls, name: str) -> dict[str, Any]:
        """0.10's dict: ``env_key``, ``env_name``, ``package``, ``action_class``,
        ``observation_class``, ``module``."""
        return _info.action_info(resolve(name, docker=False))

    @classmethod
    def list_actions(cls) -> None:
        """Print every env found here and its action class (0.10's listing)."""
        _info.print_actions()
