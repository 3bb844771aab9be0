"""Action, observation and state of the tic-tac-toe test env."""

from __future__ import annotations

from pydantic import Field

from openenv.core.env_server.types import Action, Observation, State


class OpenSpielAction(Action):
    action_id: int = Field(ge=0, le=8)
    game_name: str = "tic_tac_toe"


class OpenSpielObservation(Observation):
    info_state: list[float] = Field(default_factory=list)
    legal_actions: list[int] = Field(default_factory=list)
    current_player_id: int = 0
    game_phase: str = "playing"


class OpenSpielState(State):
    game_name: str = "tic_tac_toe"
