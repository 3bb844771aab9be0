"""A 0.10-style app configured with ``ConcurrencyConfig`` (two sessions, idle timeout)."""

import functools
import os
from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Action, Environment, Observation, State
from openenv.core.env_server.types import ConcurrencyConfig


class TickAction(Action):
    n: int = 1


class TickObservation(Observation):
    ticks: int = 0
    label: str = ""


class TickEnvironment(Environment[TickAction, TickObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, label: str = "tick") -> None:
        super().__init__()
        self.label = label
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TickObservation:
        self._state = State(episode_id=episode_id)
        return TickObservation(label=self.label)

    def step(self, action: TickAction, timeout_s: float | None = None, **kwargs: Any) -> TickObservation:
        self._state.step_count += action.n
        return TickObservation(ticks=self._state.step_count, label=self.label, reward=0.5 * action.n)

    @property
    def state(self) -> State:
        return self._state


class SoloEnvironment(TickEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = False


def make_solo() -> TickEnvironment:
    return SoloEnvironment("solo")


app = create_app(
    functools.partial(TickEnvironment, label="shared"),
    TickAction,
    TickObservation,
    env_name="tick",
    concurrency_config=ConcurrencyConfig(max_concurrent_envs=2, session_timeout=300),
)

# Bad configurations, built only when asked (the differential test imports this module with one set).
_BAD = os.environ.get("TICK_BAD_CONFIG")
if _BAD == "class":
    create_app(SoloEnvironment, TickAction, TickObservation, "solo", 4)
elif _BAD == "factory":
    create_app(make_solo, TickAction, TickObservation, "solo", concurrency_config=ConcurrencyConfig(max_concurrent_envs=2))
elif _BAD == "partial":
    create_app(functools.partial(SoloEnvironment, "p"), TickAction, TickObservation, "solo", 3)
elif _BAD == "both":
    create_app(TickEnvironment, TickAction, TickObservation, "x", 2, ConcurrencyConfig(max_concurrent_envs=2))
elif _BAD == "mode":
    create_app(TickEnvironment, TickAction, TickObservation, "x", mode="staging")
elif _BAD == "ok_single":
    create_app(SoloEnvironment, TickAction, TickObservation, "solo", 1)
