"""A plain environment for the ``/web`` JSON API tests: echoes ``message``."""

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Observation, State


class PlainEnv(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs):
        return Observation(metadata={"reset": True})

    def step(self, action, timeout_s=None, **kwargs):
        return Observation(metadata={"echo": action.message})

    @property
    def state(self):
        return State()
