"""A 0.10-style generic ``Environment[A, O, S]`` with a composite transform, a distinct reset
observation, ``CodeExecResult`` and the re-exported interface names."""

from typing import Any

from openenv.core.env_server import CompositeTransform, create_fastapi_app
from openenv.core.env_server.interfaces import (
    Action,
    Environment,
    Message,
    ModelTokenizer,
    Observation,
    State,
    Transform,
)
from openenv.core.env_server.types import CodeExecResult, HealthStatus, ServerMode


class RunAction(Action):
    code: str
    messages: list[Message] = []


class RunObservation(Observation):
    result: CodeExecResult | None = None
    length: int = 0
    tags: list = []


class StartObservation(RunObservation):
    banner: str = ""


class RunState(State):
    runs: int = 0
    last_code: str = ""


class Length(Transform):
    def __call__(self, observation):
        observation.length = len(observation.result.stdout) if observation.result else 0
        return observation


class Tag(Transform):
    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __call__(self, observation):
        observation.tags = observation.tags + [self.tag]
        if observation.result is not None and observation.result.exit_code == 0:
            observation.reward = (observation.reward or 0.0) + 0.5
        return observation


class RunEnvironment(Environment[RunAction, RunObservation, RunState]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, tokenizer: ModelTokenizer | None = None) -> None:
        super().__init__(transform=CompositeTransform([Length(), Tag("a"), Tag(HealthStatus.HEALTHY.value)]))
        self.tokenizer = tokenizer
        self._state = RunState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> StartObservation:
        self._state = RunState(episode_id=episode_id)
        return self._apply_transform(StartObservation(banner=f"seed={seed} mode={ServerMode.SIMULATION.value}"))

    def step(self, action: RunAction, timeout_s: float | None = None, **kwargs: Any) -> RunObservation:
        self._state.runs += 1
        self._state.step_count += 1
        self._state.last_code = action.code
        failed = "raise" in action.code
        result = CodeExecResult(
            stdout="" if failed else action.code.upper() + "".join(m["content"] for m in action.messages),
            stderr="Boom" if failed else "",
            exit_code=1 if failed else 0,
        )
        obs = RunObservation(result=result, reward=1.0, done=self._state.runs >= 3, metadata={"runs": self._state.runs})
        return self._apply_transform(obs)

    @property
    def state(self) -> RunState:
        return self._state


app = create_fastapi_app(
    RunEnvironment, RunAction, RunObservation, env_name="run", state_cls=RunState, reset_observation_cls=StartObservation
)
