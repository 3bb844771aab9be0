"""A 0.10-style ``HTTPEnvServer`` subclass adding its own routes through ``register_routes``."""

from typing import Any

from fastapi import FastAPI

from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Action, Environment, Observation, State
from openenv.core.env_server.serialization import deserialize_action, serialize_observation
from openenv.core.env_server.types import ConcurrencyConfig


class CountAction(Action):
    add: int = 1


class CountObservation(Observation):
    total: int = 0


class CountEnvironment(Environment[CountAction, CountObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self.total = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
        self._state = State(episode_id=episode_id)
        self.total = seed or 0
        return CountObservation(total=self.total)

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        self._state.step_count += 1
        self.total += action.add
        return CountObservation(total=self.total, reward=float(action.add), done=self.total >= 10,
                                metadata={"steps": self._state.step_count})

    @property
    def state(self) -> State:
        return self._state


class CountServer(HTTPEnvServer):
    def register_routes(self, app: FastAPI, mode: Any = "simulation") -> None:
        super().register_routes(app, mode)

        @app.post("/preview")
        def preview(body: dict) -> dict:
            env = CountEnvironment()
            env.reset(seed=body.get("seed"))
            obs = env.step(deserialize_action(body["action"], self.action_cls))
            return serialize_observation(obs)

        @app.get("/info")
        def info() -> dict:
            return {"action": self.action_cls.__name__, "observation": self.observation_cls.__name__}


server = CountServer(CountEnvironment, CountAction, CountObservation, None, ConcurrencyConfig(max_concurrent_envs=3))
app = FastAPI(title="count")
server.register_routes(app)
