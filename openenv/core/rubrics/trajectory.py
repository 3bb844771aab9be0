"""Trajectory rubrics: rewards known at the episode's end (serves ``openenv.core.rubrics.trajectory``).

A :class:`TrajectoryRubric` records each ``(action, observation)``, answers
``intermediate_reward`` until an observation is ``done``, then :meth:`score_trajectory`;
:meth:`compute_step_rewards` assigns credit to every step afterwards. Trajectories are kept in
memory until :meth:`reset` (``Environment._reset_rubric``).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from openenv.core.rubrics.base import Rubric

__all__ = ["ExponentialDiscountingTrajectoryRubric", "TrajectoryRubric"]


class TrajectoryRubric(Rubric):
    """Scores a whole episode; subclasses implement ``score_trajectory`` and ``compute_step_rewards``."""

    def __init__(self, intermediate_reward: float = 0.0) -> None:
        super().__init__()
        self.intermediate_reward = intermediate_reward
        self._trajectory: list[tuple[Any, Any]] = []

    def forward(self, action: Any, observation: Any) -> float:
        self._trajectory.append((action, observation))
        if getattr(observation, "done", False):
            return self.score_trajectory(self._trajectory)
        return self.intermediate_reward

    @abstractmethod
    def score_trajectory(self, trajectory: list[tuple[Any, Any]]) -> float:
        """The episode's final score, called once an observation is ``done``."""

    @abstractmethod
    def compute_step_rewards(self) -> list[float]:
        """One reward per recorded step (the credit assignment)."""

    def reset(self) -> None:
        self._trajectory = []

    @property
    def trajectory(self) -> list[tuple[Any, Any]]:
        """A copy of the recorded ``(action, observation)`` pairs."""
        return list(self._trajectory)

    def state_dict(self) -> dict[str, Any]:
        return {"intermediate_reward": self.intermediate_reward}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "intermediate_reward" in state:
            self.intermediate_reward = state["intermediate_reward"]


class ExponentialDiscountingTrajectoryRubric(TrajectoryRubric):
    """Step ``t`` of ``T`` gets ``gamma ** (T - 1 - t) * score_trajectory(...)``."""

    def __init__(self, gamma: float = 0.99, intermediate_reward: float = 0.0) -> None:
        super().__init__(intermediate_reward=intermediate_reward)
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.gamma = gamma

    def compute_step_rewards(self) -> list[float]:
        if not self._trajectory:
            return []
        final = self.score_trajectory(self._trajectory)
        steps = len(self._trajectory)
        return [final * (self.gamma ** (steps - 1 - t)) for t in range(steps)]

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "gamma": self.gamma}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        if "gamma" in state:
            self.gamma = state["gamma"]
