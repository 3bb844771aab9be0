"""The tic-tac-toe test env: the agent is X, the server O (highest free cell); +1 win, -1 loss, 0 draw."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openspiel_env.models import OpenSpielAction, OpenSpielObservation, OpenSpielState

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def _winner(board: list[str]) -> str | None:
    for a, b, c in LINES:
        if board[a] != " " and board[a] == board[b] == board[c]:
            return board[a]
    return None


class TicTacToeEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self.board = [" "] * 9
        self._state = OpenSpielState(episode_id=str(uuid4()), step_count=0)

    def _obs(self, reward: float | None, done: bool) -> OpenSpielObservation:
        planes = [float(c == " ") for c in self.board] + [float(c == "X") for c in self.board]
        planes += [float(c == "O") for c in self.board]
        legal = [] if done else [i for i, c in enumerate(self.board) if c == " "]
        return OpenSpielObservation(info_state=planes, legal_actions=legal, current_player_id=0,
                                    game_phase="terminal" if done else "playing", reward=reward, done=done)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> OpenSpielObservation:
        self.board = [" "] * 9
        self._state = OpenSpielState(episode_id=episode_id or str(uuid4()), step_count=0)
        return self._obs(0.0, False)

    def step(self, action: OpenSpielAction, timeout_s: float | None = None, **kwargs: Any) -> OpenSpielObservation:
        self._state.step_count += 1
        if self.board[action.action_id] != " ":
            return self._obs(-1.0, True)
        self.board[action.action_id] = "X"
        if _winner(self.board) == "X":
            return self._obs(1.0, True)
        free = [i for i, c in enumerate(self.board) if c == " "]
        if not free:
            return self._obs(0.0, True)
        self.board[max(free)] = "O"
        if _winner(self.board) == "O":
            return self._obs(-1.0, True)
        return self._obs(0.0, " " not in self.board)

    @property
    def state(self) -> OpenSpielState:
        return self._state


app = create_app(TicTacToeEnvironment, OpenSpielAction, OpenSpielObservation, env_name="openspiel_env",
                 max_concurrent_envs=4)
