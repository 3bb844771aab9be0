"""A 0.10-style environment scored by a rubric tree (containers + a trajectory rubric).

Written only against the published 0.10 import surface; served unchanged by ours and by 0.10.
"""

from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Action, Environment, Observation, State
from openenv.core.rubrics import (
    ExponentialDiscountingTrajectoryRubric,
    Gate,
    Rubric,
    RubricDict,
    Sequential,
    WeightedSum,
)


class GuessAction(Action):
    guess: int
    style: str = "plain"


class GuessObservation(Observation):
    hint: str = ""
    scores: dict = {}


class GuessState(State):
    target: int = 0
    history: list = []


class Closeness(Rubric):
    def forward(self, action, observation) -> float:
        return max(0.0, 1.0 - abs(action.guess - observation.metadata["target"]) / 10.0)


class Politeness(Rubric):
    def forward(self, action, observation) -> float:
        return 1.0 if action.style == "polite" else 0.5


class Finish(ExponentialDiscountingTrajectoryRubric):
    def score_trajectory(self, trajectory) -> float:
        _, last = trajectory[-1]
        return 1.0 if last.hint == "exact" else 0.2


class GuessRubric(Rubric):
    def __init__(self) -> None:
        super().__init__()
        self.step_score = Sequential(Gate(Closeness(), threshold=0.3), WeightedSum([Closeness(), Politeness()], [0.75, 0.25]))
        self.outcome = Finish(gamma=0.5)
        self.styles = RubricDict({"plain": Politeness(), "polite": Politeness()})

    def forward(self, action, observation) -> float:
        return round(self.step_score(action, observation) + self.outcome(action, observation), 6)


class GuessEnvironment(Environment[GuessAction, GuessObservation, GuessState]):
    SUPPORTS_CONCURRENT_SESSIONS = True
    MAX_STEPS = 4

    def __init__(self) -> None:
        super().__init__(rubric=GuessRubric())
        self._state = GuessState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> GuessObservation:
        self._reset_rubric()
        self._state = GuessState(episode_id=episode_id or "ep", target=(seed or 0) % 10)
        return GuessObservation(hint="start")

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any) -> GuessObservation:
        self._state.step_count += 1
        self._state.history = self._state.history + [action.guess]
        target = self._state.target
        hint = "exact" if action.guess == target else ("higher" if action.guess < target else "lower")
        done = hint == "exact" or self._state.step_count >= self.MAX_STEPS
        obs = GuessObservation(hint=hint, done=done, metadata={"target": target})
        obs.reward = self._apply_rubric(action, obs)
        obs.scores = {name: r.last_score for name, r in self.rubric.named_rubrics() if r.last_score is not None}
        if done:
            obs.metadata = {"target": target, "step_rewards": self.rubric.outcome.compute_step_rewards()}
        return obs

    @property
    def state(self) -> GuessState:
        return self._state


app = create_app(GuessEnvironment, GuessAction, GuessObservation, "guess", 4, state_cls=GuessState)
