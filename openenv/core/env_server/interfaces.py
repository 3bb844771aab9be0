"""The environment contract.

Lifecycle of one environment instance (one session):

    created ──reset()──▶ running ──step()*──▶ done ──reset()──▶ running … ──close()──▶ closed

* ``reset(seed=None, episode_id=None, **kwargs)`` starts an episode and returns the first
  observation. The server passes only the kwargs that ``reset`` accepts.
* ``step(action, timeout_s=None, **kwargs)`` applies one action and returns an observation whose
  ``reward``/``done`` fields end the step. The server enforces ``timeout_s`` as a deadline;
  an environment may also honour it itself.
* ``state`` describes the episode. The default tracks ``episode_id`` and ``step_count``.
* ``close()`` releases resources; the server calls it when the session ends.

``reset_async``/``step_async``/``close_async`` are awaited on the server's event loop when an
environment overrides them (they must not block); plain methods run in a worker thread.
Set ``SUPPORTS_CONCURRENT_SESSIONS = True`` when several instances may live side by side,
so one server can hold many sessions.
"""

from __future__ import annotations

import inspect
import uuid
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from openenv.core.env_server.types import EnvironmentMetadata, State

__all__ = ["Environment"]


class Environment(ABC):
    """Base class of an environment served by ``create_app``."""

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = False

    @abstractmethod
    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        """Start a new episode and return its first observation."""

    @abstractmethod
    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """Apply ``action`` and return the resulting observation."""

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        """Async variant; the default calls :meth:`reset`."""
        return self.reset(seed=seed, episode_id=episode_id, **kwargs)

    async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """Async variant; the default calls :meth:`step`."""
        return self.step(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self) -> Any:
        """The episode's state; the default is kept up to date by the server."""
        default = self.__dict__.get("_openenv_default_state")
        if default is None:
            default = State()
            self.__dict__["_openenv_default_state"] = default
        return default

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources held by this instance."""

    async def close_async(self) -> None:
        """Async variant; the default calls :meth:`close`."""
        self.close()

    def get_metadata(self) -> EnvironmentMetadata:
        """Name, description and version shown by ``GET /metadata``."""
        doc = inspect.cleandoc(type(self).__dict__.get("__doc__") or "")
        return EnvironmentMetadata(name=type(self).__name__, description=doc.split("\n\n")[0])

    # -- helpers used by the server ---------------------------------------------------------

    @classmethod
    def overrides(cls, env: object, name: str) -> bool:
        """True when ``env``'s class overrides ``Environment.<name>``."""
        impl = getattr(type(env), name, None)
        return impl is not None and impl is not getattr(Environment, name, None)

    @staticmethod
    def new_episode_id() -> str:
        return uuid.uuid4().hex
