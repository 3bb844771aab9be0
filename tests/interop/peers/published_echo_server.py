"""An echo environment served by the PUBLISHED openenv-core (run in its own venv).

Usage: python -P published_echo_server.py PORT [MAX_SESSIONS]
"""

import sys

import uvicorn
from pydantic import Field

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class EchoAction(Action):
    message: str = Field(description="Text to echo")


class EchoObservation(Observation):
    echoed_message: str = ""
    message_length: int = 0


class EchoEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs):
        self._state = State(episode_id=episode_id or "published", step_count=0)
        return EchoObservation(echoed_message="Echo environment ready!", message_length=0, reward=0.0)

    def step(self, action, timeout_s=None, **kwargs):
        self._state.step_count += 1
        n = len(action.message)
        return EchoObservation(echoed_message=action.message, message_length=n, reward=round(n * 0.1, 10))

    @property
    def state(self):
        return self._state


if __name__ == "__main__":
    port = int(sys.argv[1])
    cap = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", max_concurrent_envs=cap)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", ws_per_message_deflate=False)
