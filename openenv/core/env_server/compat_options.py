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
    "PublishedServerAPI",
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


class PublishedServerAPI:
    """The published ``HTTPEnvServer`` attributes that 0.10 subclasses read (mixed into ours).

    ``_env_factory`` builds a fresh environment (an instance server hands back its instance);
    capacity is read from the session pool.
    """

    sessions: Any
    instance: Any
    env_cls: type | None
    _factory: Callable[[], Any]

    def _env_factory(self) -> Any:
        return self.instance if self.instance is not None else self._factory()

    @property
    def active_sessions(self) -> int:
        return self.sessions.active

    @property
    def max_concurrent_envs(self) -> int:
        return self.sessions.max_sessions

    @property
    def concurrency_config(self) -> ConcurrencyConfig:
        return ConcurrencyConfig(max_concurrent_envs=self.sessions.max_sessions, session_timeout=self.sessions.idle_timeout_s)

    @property
    def is_concurrency_safe(self) -> bool:
        return bool(getattr(self.env_cls, "SUPPORTS_CONCURRENT_SESSIONS", False))

    def get_capacity_status(self) -> Any:
        from openenv.core.env_server.types import ServerCapacityStatus

        return ServerCapacityStatus.from_counts(active=self.sessions.active, max_sessions=self.sessions.max_sessions)
