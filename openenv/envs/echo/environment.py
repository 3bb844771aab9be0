"""The echo environment: returns each message with a reward of 0.1 per character."""

from __future__ import annotations

from typing import Any, ClassVar

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata
from openenv.envs.echo.models import EchoAction, EchoObservation, EchoState

__all__ = ["EchoEnvironment"]

REWARD_PER_CHAR = 0.1


class EchoEnvironment(Environment):
    """Echoes messages back; reward is 0.1 x the message length. Never ends by itself."""

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True

    def __init__(self) -> None:
        # Plain attributes, read into an EchoState on demand: a step pays no model validation.
        self._episode_id: str | None = self.new_episode_id()  # as 0.10's echo: a fresh env can be stepped
        self._step_count = 0
        self._last_message = ""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        self._episode_id = episode_id or self.new_episode_id()
        self._step_count, self._last_message = 0, ""
        return EchoObservation(echoed_message="Echo environment ready!", message_length=0, reward=0.0)

    def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
        message = action.message
        self._step_count += 1
        self._last_message = message
        length = len(message)
        return EchoObservation(
            echoed_message=message,
            message_length=length,
            reward=round(length * REWARD_PER_CHAR, 10),
            metadata={"step": self._step_count},
        )

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        return self.reset(seed=seed, episode_id=episode_id)

    async def step_async(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
        return self.step(action)  # pure computation: safe to run on the event loop

    @property
    def state(self) -> EchoState:
        return EchoState(episode_id=self._episode_id, step_count=self._step_count, last_message=self._last_message)

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="echo",
            description="Echoes each message back; reward is 0.1 x its length.",
            version="1.0",
        )
