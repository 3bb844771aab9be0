"""An echo environment written the way a 0.10 author writes one (served by the published 0.10).

Its observations carry metadata, so a 0.10 server nests it in ``observation`` (and lifts it): the
shape our clients must read. ``SUPPORTS_CONCURRENT_SESSIONS`` with room for a 64-session vector.
"""

import time
from typing import Any
from uuid import uuid4

from pydantic import Field

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class EchoAction(Action):
    message: str = Field(..., description="Text to echo")


class EchoObservation(Observation):
    echoed_message: str = ""
    message_length: int = 0


class EchoEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return EchoObservation(echoed_message="Echo environment ready!", reward=0.0, done=False,
                               metadata={"seed": seed})

    def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
        self._state.step_count += 1
        msg = action.message
        if msg.startswith("sleep:"):  # a slow step, for client-side timeouts
            time.sleep(float(msg[len("sleep:"):]))
        return EchoObservation(echoed_message=msg, message_length=len(msg), reward=len(msg) * 0.1,
                               done=False, metadata={"step": self._state.step_count})

    @property
    def state(self) -> State:
        return self._state


app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", max_concurrent_envs=256)
