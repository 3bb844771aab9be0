"""An environment whose schemas use the team's display conventions (docs/authoring.md): a code
field and a multi-line field in the action, an image, multi-line text, a long log, numbers and a
boolean in the observation, and a reset parameter of its own.

No ``from __future__ import annotations``: the server reads ``reset``'s annotations as objects.
"""

from typing import Any, ClassVar

from fastapi import FastAPI
from pydantic import Field

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from tests.webui.zoo_env import tiny_png

CODE = {"format": "code", "contentMediaType": "text/x-python"}
PNG = {"contentEncoding": "base64", "contentMediaType": "image/png"}


class RichAction(Action):
    code: str = Field("print(1)", description="Python source", json_schema_extra=CODE)
    notes: str = Field("", json_schema_extra={"format": "multiline"})


class RichObservation(Observation):
    stdout: str = ""
    board: str = Field("", json_schema_extra={"format": "multiline"})
    frame: str = Field("", json_schema_extra=PNG)
    log: str = ""
    score: float = 0.0
    ok: bool = False


class RichState(State):
    difficulty: int = 1
    last_code: str = ""


class RichEnvironment(Environment):
    """Echoes the code back as stdout, draws a board, and attaches a picture."""

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__()
        self._state = RichState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, difficulty: int = 1,
              **kwargs: Any) -> RichObservation:
        self._state = RichState(episode_id=episode_id or "rich", difficulty=difficulty)
        return RichObservation(stdout=f"ready at difficulty {difficulty}", board="+-+\n| |\n+-+")

    def step(self, action: RichAction, timeout_s: float | None = None, **kwargs: Any) -> RichObservation:
        self._state.step_count += 1
        self._state.last_code = action.code
        return RichObservation(
            stdout=f">>> ran\n{action.code}\n<<< done", board="X|O\n-+-\nO|X", frame=tiny_png(),
            log="\n".join(f"log line {i}" for i in range(60)), score=0.25 * self._state.step_count,
            ok=True, reward=float(len(action.code)), done=False,
        )

    @property
    def state(self) -> RichState:
        return self._state


def rich_app() -> FastAPI:
    return create_app(RichEnvironment, RichAction, RichObservation, env_name="rich", max_concurrent_envs=8)
