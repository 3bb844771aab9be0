"""The published 0.10 ``create_app``/``HTTPEnvServer`` options: concurrency, mode, Gradio.

Serves the argument handling of ``openenv.core.env_server.http_server`` in 0.10:
``max_concurrent_envs`` or ``ConcurrencyConfig`` (never both), the start-up guard
(``ConcurrencyConfigurationError``), ``REQUIRES_SINGLE_THREAD_EXECUTOR`` and ``mode=`` /
``OPENENV_MODE``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import ConcurrencyConfig, ServerMode
from openenv.core.errors import ConcurrencyConfigurationError

__all__ = [
    "check_concurrency_safety",
    "requires_single_thread",
    "resolve_concurrency",
    "resolve_mode",
    "unwrap_factory",
]

log = logging.getLogger("openenv.server")

_UNSET: Any = object()


def resolve_concurrency(
    max_concurrent_envs: int | None, concurrency_config: ConcurrencyConfig | None, session_timeout_s: Any
) -> tuple[int | None, Any]:
    """``(cap, idle timeout)`` from the 0.10 arguments; ``session_timeout_s`` is ours (kept unless a config is given)."""
    if max_concurrent_envs is not None and concurrency_config is not None:
        raise ValueError(
            "Cannot specify both 'max_concurrent_envs' and 'concurrency_config'. "
            "Please use only one method to configure concurrency."
        )
    if concurrency_config is None:
        return max_concurrent_envs, session_timeout_s
    if isinstance(concurrency_config, dict):
        concurrency_config = ConcurrencyConfig(**concurrency_config)
    return concurrency_config.max_concurrent_envs, concurrency_config.session_timeout


def unwrap_factory(factory: Any) -> Any:
    """The callable under ``functools.partial`` layers."""
    while isinstance(factory, functools.partial):
        factory = factory.func
    return factory


def check_concurrency_safety(factory: Callable[[], Any] | None, env_cls: type | None, cap: int | None) -> None:
    """Raise ``ConcurrencyConfigurationError`` when ``cap > 1`` on an ``Environment`` not marked concurrent-safe.

    As in 0.10, a factory that is not a class (nor a partial of one) is called once (and the env closed) to learn it.
    Classes that do not derive from ``Environment`` (duck-typed envs) are not checked.
    """
    if cap is None or cap <= 1:
        return
    cls = env_cls
    inner = unwrap_factory(factory)
    if isinstance(inner, type):
        cls = inner
    elif factory is not None and not inspect.iscoroutinefunction(inner):
        probe = factory()
        cls = type(probe)
        close = getattr(probe, "close", None)
        if callable(close):
            close()
    if isinstance(cls, type) and issubclass(cls, Environment) and not cls.SUPPORTS_CONCURRENT_SESSIONS:
        raise ConcurrencyConfigurationError(environment_name=cls.__name__, max_concurrent_envs=cap)


def requires_single_thread(factory: Any, env_cls: type | None) -> bool:
    """Whether the env class asks that every sync call run on one shared thread."""
    inner = unwrap_factory(factory)
    cls = inner if isinstance(inner, type) else env_cls
    return bool(getattr(cls, "REQUIRES_SINGLE_THREAD_EXECUTOR", False))


def resolve_mode(mode: ServerMode | str | None) -> ServerMode:
    """``mode`` or ``OPENENV_MODE`` (default ``simulation``); an unknown name raises ``ValueError``."""
    if mode is None:
        mode = os.environ.get("OPENENV_MODE") or ServerMode.SIMULATION.value
    if isinstance(mode, ServerMode):
        return mode
    try:
        return ServerMode(str(mode).lower())
    except ValueError:
        valid = [m.value for m in ServerMode]
        raise ValueError(f"Invalid mode: '{mode}'. Must be one of: {valid}") from None
