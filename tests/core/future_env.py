"""An environment module with postponed annotations and no docstring on its class."""

from __future__ import annotations

from typing import Literal

from openenv.core.env_server import Environment, Observation


class ModeEnvironment(Environment):
    def reset(self, seed: int | None = None, episode_id: str | None = None, mode: Literal["easy", "hard"] = "easy") -> Observation:
        return Observation()

    def step(self, action, timeout_s=None, **kwargs) -> Observation:
        return Observation()
