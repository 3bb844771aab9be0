"""Small environments used by the core tests."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import Field

from openenv.core.env_server import Action, Environment, Observation, State


class SleepAction(Action):
    seconds: float = Field(ge=0)
    fail: bool = False


class SleepObservation(Observation):
    slept: float = 0.0


class SleepState(State):
    total_slept: float = 0.0


class SleepyEnvironment(Environment):
    """A sync env whose step sleeps (blocking) for the requested time; can raise."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    closed: list[str] = []

    def __init__(self) -> None:
        self._state = SleepState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, difficulty: int = 1) -> SleepObservation:
        self._state = SleepState(episode_id=episode_id or "auto", step_count=0)
        return SleepObservation(slept=0.0, metadata={"difficulty": difficulty, "seed": seed})

    def step(self, action: SleepAction, timeout_s: float | None = None, **kwargs: Any) -> SleepObservation:
        if action.fail:
            raise ValueError("boom at /root/secret/path.py")
        time.sleep(action.seconds)
        self._state.step_count += 1
        self._state.total_slept += action.seconds
        return SleepObservation(slept=action.seconds, reward=1.0, done=self._state.step_count >= 3)

    @property
    def state(self) -> SleepState:
        return self._state

    def close(self) -> None:
        SleepyEnvironment.closed.append(self._state.episode_id or "")


class AsyncSleepyEnvironment(SleepyEnvironment):
    """Async variant: sleeps cooperatively on the event loop."""

    async def step_async(self, action: SleepAction, timeout_s: float | None = None, **kwargs: Any) -> SleepObservation:
        await asyncio.sleep(action.seconds)
        self._state.step_count += 1
        return SleepObservation(slept=action.seconds, reward=1.0)
