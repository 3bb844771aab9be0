"""An Open Reward Standard environment class served live as an MCP tool environment.

Reset opens an ORS session on a task (``split``/``index`` as the Task API numbers them, else
``seed``, else the first task); its prompt is in ``metadata["prompt"]``. Every ORS tool is an
MCP tool; a tool output's ``reward`` and ``finished`` are the step's reward and done, its
``metadata`` (per-check scores, when the env reports them) the observation's metadata.
"""

from __future__ import annotations

import uuid
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.env_server.types import Observation, State

from .verifiers_env import plain

__all__ = ["ORSEnvironment"]


def _wait(value: Any) -> Any:
    import inspect

    if inspect.isawaitable(value):
        from .verifiers_env import run

        async def _await() -> Any:
            return await value

        return run(_await())
    return value


def _split(entry: Any) -> dict[str, Any]:
    value = plain(entry)
    if isinstance(value, dict):
        return value
    return {"name": str(value), "type": value if value in ("train", "validation", "test") else "validation"}


def _tool(spec: Any) -> Tool:
    value = plain(spec)
    schema = value.get("input_schema") or {"type": "object", "properties": {}}
    return Tool(name=value["name"], description=value.get("description") or "", input_schema=schema)


class ORSEnvironment(Environment):
    """One ORS session per episode of the class ``ors_cls``."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, ors_cls: type) -> None:
        super().__init__()
        self.ors_cls = ors_cls
        self._ors: Any | None = None
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self._meta: dict[str, Any] = {}

    def list_splits(self) -> list[dict[str, Any]]:
        return [_split(s) for s in _wait(self.ors_cls.list_splits())]

    def list_tasks(self, split: str) -> list[Any]:
        return plain(_wait(self.ors_cls.list_tasks(split)))

    def num_tasks(self, split: str) -> int:
        return int(_wait(self.ors_cls.num_tasks(split)))

    def get_task(self, split: str, index: int) -> Any:
        return plain(_wait(self.ors_cls.get_task(split, index)))

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]:
        return plain(_wait(self.ors_cls.get_task_range(split, start, stop)))

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_spec: dict[str, Any] | None = None,
              split: str | None = None, index: int | None = None, task_index: int | None = None,
              secrets: dict[str, str] | None = None, **kwargs: Any) -> Observation:
        self.close()
        index = index if index is not None else task_index
        if task_spec is None:
            split = split or self.list_splits()[0]["name"]
            total = self.num_tasks(split)
            if index is None:
                index = seed % total if seed is not None else 0
            if not 0 <= index < total:
                raise IndexError(f"task index {index} is out of range: split {split!r} has {total} tasks")
            task_spec = self.get_task(split, index)
        self._ors = self.ors_cls(task_spec=task_spec, secrets=secrets or {})
        _wait(self._ors.setup())
        prompt = plain(_wait(self._ors.get_prompt()))
        self._meta = {"source_type": "ors", "original_env_class": self.ors_cls.__name__, "split": split,
                      "index": index, "task_spec": plain(task_spec)}
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0, **self._meta)
        return Observation(done=False, reward=None, metadata=dict(self._meta, prompt=prompt))

    def _tools(self) -> list[Tool]:
        tools = [_tool(t) for t in self.ors_cls.list_tools().tools]
        if self._ors is not None:
            tools += [_tool(t) for t in _wait(self._ors.list_task_tools()).tools]
        return tools

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(tools=self._tools())
        if not isinstance(action, CallToolAction):
            raise TypeError(f"Unsupported action type: {type(action).__name__}")
        if self._ors is None:
            raise RuntimeError("Call reset() before invoking ORS tools")
        result = _wait(self._ors._call_tool(action.tool_name, action.arguments))
        root = getattr(result, "root", result)
        if getattr(root, "ok", False):
            out = root.output
            metadata = plain(out.metadata) or {}
            return CallToolObservation(tool_name=action.tool_name, reward=out.reward, done=bool(out.finished),
                                       result={"blocks": plain(out.blocks), "metadata": metadata},
                                       metadata=dict(self._meta, **metadata))
        reason = getattr(root, "reason", None)
        kind = ToolErrorType.TOOL_NOT_FOUND if reason == "not_found" else (
            ToolErrorType.INVALID_ARGS if reason == "input_validation" else ToolErrorType.EXECUTION_ERROR)
        return CallToolObservation(tool_name=action.tool_name, result=None, reward=None, done=False,
                                   error=ToolError(error_type=kind, message=str(getattr(root, "error", root))))

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        if self._ors is not None:
            ors, self._ors = self._ors, None
            _wait(ors.teardown())
