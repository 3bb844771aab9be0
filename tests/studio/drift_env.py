"""A counting env that drifts on purpose: from the second reset served by a process on, the
observation of step 2 carries how many resets the process has served, so a fork of an episode
recorded on an earlier reset diverges at step 2 and nowhere else."""

from typing import Any, ClassVar

from fastapi import FastAPI

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class DriftAction(Action):
    add: int = 1


class DriftObservation(Observation):
    total: int = 0
    drift: int = 0


class DriftEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True
    resets: ClassVar[int] = 0

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._total = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> DriftObservation:
        type(self).resets += 1
        self._state = State(episode_id=episode_id or "drift")
        self._total = 0
        return DriftObservation(total=0, reward=0.0)

    def step(self, action: DriftAction, timeout_s: float | None = None, **kwargs: Any) -> DriftObservation:
        self._state.step_count += 1
        self._total += action.add
        drift = type(self).resets if self._state.step_count == 2 and type(self).resets > 1 else 0
        return DriftObservation(total=self._total, drift=drift, reward=float(action.add))

    @property
    def state(self) -> State:
        return self._state


def drift_app() -> FastAPI:
    DriftEnvironment.resets = 0
    return create_app(DriftEnvironment, DriftAction, DriftObservation, env_name="drift", max_concurrent_envs=8)
