"""Environments that each break one part of the contract, for the checks to catch."""

from __future__ import annotations

import random
import subprocess
import threading
from typing import Any, ClassVar

from pydantic import Field

from openenv.core import Action, Environment, Observation, State


class CountAction(Action):
    n: int = Field(default=1, ge=0, le=10)


class CountObservation(Observation):
    total: int = 0
    start: float = 0.0


class OtherObservation(Observation):
    note: str = ""


class CountState(State):
    total: int = 0


class CountEnvironment(Environment):
    """A well-behaved counter: adds ``n`` each step, done at ``DONE_AT`` steps."""

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True
    DONE_AT: ClassVar[int] = 3

    def __init__(self) -> None:
        self._state = CountState()
        self._start = 0.0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
        self._start = random.Random(seed).random()
        self._state = CountState(episode_id=episode_id or self.new_episode_id())
        return CountObservation(start=self._start)

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        self._state.step_count += 1
        self._state.total += action.n
        done = self._state.step_count >= self.DONE_AT
        return CountObservation(total=self._state.total, start=self._start, reward=float(action.n), done=done)

    @property
    def state(self) -> CountState:
        return self._state


class WrongObservationType(CountEnvironment):
    """step is annotated to return CountObservation but returns another type."""

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        super().step(action)
        return OtherObservation(note="surprise")  # type: ignore[return-value]


class WrongResetType(CountEnvironment):
    """reset returns a plain dict."""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
        super().reset(seed, episode_id)
        return {"total": 0}  # type: ignore[return-value]


class IgnoresSeed(CountEnvironment):
    """reset draws a fresh random start whatever the seed."""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
        obs = super().reset(None, episode_id)
        self._start = obs.start = random.random()
        return obs


class NoisySteps(CountEnvironment):
    """The first observation follows the seed, but steps draw from an unseeded source."""

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        obs = super().step(action)
        obs.start = random.random()
        return obs


class FrozenState(CountEnvironment):
    """Its state never follows the episode."""

    @property
    def state(self) -> CountState:
        return CountState(episode_id=self._state.episode_id, step_count=0)


class RaisingStep(CountEnvironment):
    """Every step raises."""

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        raise ValueError("the step is broken")


class CrashesAfterDone(CountEnvironment):
    """A step after done raises a plain exception instead of an observation or OpenEnvError."""

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        if self._state.step_count >= self.DONE_AT:
            raise IndexError("no more steps")
        return super().step(action)


class LossyObservation(Observation):
    total: int = 0
    secret: int = Field(exclude=True)


class LossyWire(CountEnvironment):
    """Its observation drops a required field when serialised: it cannot be rebuilt by a client."""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> LossyObservation:
        super().reset(seed, episode_id)
        return LossyObservation(secret=1)

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> LossyObservation:
        obs = super().step(action)
        return LossyObservation(total=obs.total, secret=2, reward=obs.reward, done=obs.done)


class LeaksAThread(CountEnvironment):
    """reset starts a worker thread that close() never stops."""

    stop: ClassVar[threading.Event] = threading.Event()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
        threading.Thread(target=self.stop.wait, name="leaked-worker", daemon=True).start()
        return super().reset(seed, episode_id)


class ClosesAsync(CountEnvironment):
    """Stops its worker in ``close_async`` only (the server awaits that): not a leak."""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
        self._stop = threading.Event()
        threading.Thread(target=self._stop.wait, name="async-closed-worker", daemon=True).start()
        return super().reset(seed, episode_id)

    async def close_async(self) -> None:
        self._stop.set()


class LeaksAProcess(CountEnvironment):
    """reset starts a child process that close() never stops."""

    started: ClassVar[list[subprocess.Popen]] = []

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
        self.started.append(subprocess.Popen(["sleep", "60"]))
        return super().reset(seed, episode_id)
