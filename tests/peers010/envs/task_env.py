"""A 0.10-style dataset-backed environment offering the Task API (``TaskProvider``, structurally).

Splits as strings, a dict and a pydantic model; tasks as models and dicts; ``list_splits``,
``num_tasks`` and ``get_task_range`` async, the others sync. ``get_task``/``get_task_range``
raise ``IndexError`` out of range, ``list_tasks("huge")`` raises ``NotImplementedError`` and an
unknown split ``KeyError``. ``TASK_ENV_VARIANT=plain`` serves an environment with no task methods.
"""

import os
from typing import Any

from pydantic import BaseModel

from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Action, Environment, Observation, State


class PickAction(Action):
    index: int = 0


class PickObservation(Observation):
    prompt: str = ""


class TaskSpec(BaseModel):
    id: str
    prompt: str
    difficulty: int = 1


class SplitInfo(BaseModel):
    name: str
    type: str
    num_tasks: int


TASKS: dict[str, list[Any]] = {
    "train": [TaskSpec(id=f"train-{i}", prompt=f"add {i} and {i}", difficulty=i % 3) for i in range(5)],
    "test": [{"id": f"test-{i}", "prompt": f"double {i}", "tags": ["math", i]} for i in range(3)],
}


class PlainEnvironment(Environment[PickAction, PickObservation, State]):
    def __init__(self) -> None:
        super().__init__()
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> PickObservation:
        self._state = State(episode_id=episode_id)
        return PickObservation(prompt="ready")

    def step(self, action: PickAction, timeout_s: float | None = None, **kwargs: Any) -> PickObservation:
        self._state.step_count += 1
        return PickObservation(prompt=f"picked {action.index}", reward=1.0, done=True)

    @property
    def state(self) -> State:
        return self._state


class TaskEnvironment(PlainEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def _split(self, split: str) -> list[Any]:
        return TASKS[split]  # KeyError for an unknown split

    async def list_splits(self) -> list[Any]:
        return ["train", "test", "holdout", {"name": "dev", "type": "validation", "size": 2},
                SplitInfo(name="custom", type="test", num_tasks=0)]

    def list_tasks(self, split: str) -> list[Any]:
        if split == "huge":
            raise NotImplementedError("too large to list")
        return self._split(split)

    async def num_tasks(self, split: str) -> int:
        return len(self._split(split))

    def get_task(self, split: str, index: int) -> Any:
        return self._split(split)[index]

    async def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]:
        tasks = self._split(split)
        if stop is not None and stop > len(tasks):
            raise IndexError(stop)
        return tasks[start:stop]


if os.environ.get("TASK_ENV_VARIANT") == "plain":
    app = create_fastapi_app(PlainEnvironment, PickAction, PickObservation)  # env_name: the class name
else:
    app = create_fastapi_app(TaskEnvironment, PickAction, PickObservation, env_name="quiz", max_concurrent_envs=4)
