"""A counter environment as 0.10's tutorials write one: it ignores ``reset(episode_id=...)``
(``State()`` keeps ``episode_id=None``) and only works after a reset (a step before it raises)."""

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class AddAction(Action):
    n: int = 1


class CountObservation(Observation):
    count: int = 0


class CounterEnvironment(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs) -> CountObservation:
        self._state = State(step_count=0)
        self._count = 0
        return CountObservation(count=0, done=False, reward=0.0)

    def step(self, action: AddAction, timeout_s=None, **kwargs) -> CountObservation:
        self._count += action.n  # AttributeError before the first reset, as in the tutorials
        self._state.step_count += 1
        done = self._count >= 5
        return CountObservation(count=self._count, done=done, reward=1.0 if done else 0.0)

    @property
    def state(self) -> State:
        return self._state


app = create_app(CounterEnvironment, AddAction, CountObservation, env_name="counter")
