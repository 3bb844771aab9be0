"""A verifiers environment played turn by turn: each step is one assistant turn (text or tool calls).

verifiers runs a whole rollout itself, asking an OpenAI-style client for every assistant turn.
Here the client is :class:`TurnClient`: it hands the prompt to the OpenEnv session and waits for
the next action, so the env's own loop (``env_response``, tools, stop conditions, then the
rubric) runs unchanged. Reset picks a dataset row (``split``/``index`` as the Task API numbers
them, else ``seed``); the final step's reward is the rubric's, its per-function scores are in
``metadata["metrics"]``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import queue
import random
import threading
import time
import uuid
from typing import Any

from pydantic import BaseModel, Field
from verifiers.legacy.clients.client import Client
from verifiers.legacy.types import Response, ResponseMessage, ToolCall

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

__all__ = ["TurnClient", "VerifiersAction", "VerifiersEnvironment", "VerifiersObservation", "plain"]

_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()
DEFAULT_TURN_TIMEOUT_S = 300.0


def event_loop() -> asyncio.AbstractEventLoop:
    """The one loop (on its own thread) every verifiers rollout of this process runs on."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            _LOOP = asyncio.new_event_loop()
            threading.Thread(target=_LOOP.run_forever, name="verifiers-loop", daemon=True).start()
        return _LOOP


def run(coro: Any, timeout: float | None = None) -> Any:
    """Run a coroutine on :func:`event_loop` and wait for it."""
    return asyncio.run_coroutine_threadsafe(coro, event_loop()).result(timeout)


def plain(value: Any) -> Any:
    """JSON-ready copy of verifiers values (pydantic messages, datasets rows)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if hasattr(value, "model_dump"):
        return plain(value.model_dump(exclude_none=True))
    return str(value)


class ToolCallSpec(BaseModel):
    """One tool call of an assistant turn."""

    name: str = Field(..., description="Tool name, as listed in the observation's tools")
    arguments: dict[str, Any] | str = Field(default_factory=dict, description="Arguments (object or JSON text)")
    id: str | None = Field(default=None, description="Call id (generated when omitted)")


class VerifiersAction(Action):
    """One assistant turn: its text, and/or tool calls for a tool environment."""

    message: str = Field(default="", description="The assistant's reply", json_schema_extra={"format": "textarea"})
    tool_calls: list[ToolCallSpec] = Field(default_factory=list, description="Tool calls (ToolEnv)")


class VerifiersObservation(Observation):
    """The conversation so far; ``new_messages`` is what the environment said since the last turn."""

    messages: list[dict[str, Any]] = Field(default_factory=list, description="Prompt and completion so far",
                                           json_schema_extra={"format": "chat"})
    new_messages: list[dict[str, Any]] = Field(default_factory=list, description="The last turn and the env's reply",
                                               json_schema_extra={"format": "chat"})
    tools: list[dict[str, Any]] = Field(default_factory=list, description="Tools the assistant may call")


class TurnClient(Client):
    """A verifiers client whose "model" is the OpenEnv session: each request waits for a step's action."""

    def __init__(self, session: _Rollout) -> None:
        super().__init__(None)
        self.session = session

    def setup_client(self, config: Any) -> Any:
        return None

    async def to_native_tool(self, tool: Any) -> Any:
        return tool

    async def to_native_prompt(self, messages: Any) -> tuple[Any, dict]:
        return messages, {}

    async def get_native_response(self, prompt: Any, model: str, sampling_args: Any, tools: Any = None,
                                  **kwargs: Any) -> VerifiersAction:
        return await self.session.ask(prompt, tools or [])

    async def raise_from_native_response(self, response: Any) -> None:
        return None

    async def from_native_response(self, action: VerifiersAction) -> Response:
        calls = [ToolCall(id=c.id or f"call_{uuid.uuid4().hex[:12]}", name=c.name,
                          arguments=c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments))
                 for c in action.tool_calls]  # fmt: skip
        message = ResponseMessage(content=action.message, tool_calls=calls or None, is_truncated=False,
                                  finish_reason="tool_calls" if calls else "stop")
        return Response(id=f"openenv-{uuid.uuid4().hex[:12]}", created=int(time.time()), model="openenv", message=message)

    async def close(self) -> None:
        return None


class _Rollout:
    """One verifiers rollout in progress; the sync side exchanges turns with it through two queues."""

    def __init__(self, vf_env: Any, row: dict[str, Any]) -> None:
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._reply: asyncio.Future[VerifiersAction] | None = None
        self._ready = threading.Event()
        self.future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(
            self._run(vf_env, row), event_loop())

    async def _run(self, vf_env: Any, row: dict[str, Any]) -> None:
        try:
            state = await vf_env._run_rollout_state(row, TurnClient(self), "openenv", {})
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the session reports it as the step's error
            self.events.put(("error", exc))
            return
        self.events.put(("done", state))

    async def ask(self, prompt: Any, tools: list[Any]) -> VerifiersAction:
        self._reply = asyncio.get_running_loop().create_future()
        self.events.put(("turn", (prompt, tools)))
        return await self._reply

    def answer(self, action: VerifiersAction) -> None:
        loop = event_loop()
        reply = self._reply
        if reply is None:
            raise RuntimeError("the rollout is not waiting for a turn")
        self._reply = None
        loop.call_soon_threadsafe(lambda: reply.done() or reply.set_result(action))

    def next_event(self, timeout: float) -> tuple[str, Any]:
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"the verifiers environment did not answer within {timeout:g} s") from None

    def cancel(self) -> None:
        self.future.cancel()


def dataset_rows(vf_env: Any, split: str) -> Any:
    if split == "eval":
        return vf_env.get_eval_dataset()
    if split == "train":
        return vf_env.get_dataset()
    raise IndexError(f"unknown split {split!r}: use train or eval")


class VerifiersEnvironment(Environment):
    """An OpenEnv session over a (shared) verifiers environment."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, vf_env: Any, source: str = "verifiers") -> None:
        super().__init__()
        self.vf_env, self.source = vf_env, source
        self._rollout: _Rollout | None = None
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self._seen = 0  # messages already shown

    # Task API
    def list_splits(self) -> list[dict[str, Any]]:
        splits = [{"name": "train", "type": "train"}] if self.vf_env.dataset_source is not None else []
        if self.vf_env.eval_dataset_source is not None:
            splits.append({"name": "eval", "type": "validation"})
        return splits

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return [plain(r) for r in dataset_rows(self.vf_env, split)]

    def num_tasks(self, split: str) -> int:
        return len(dataset_rows(self.vf_env, split))

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return plain(dataset_rows(self.vf_env, split)[index])

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        return self.list_tasks(split)[start:stop]

    def reset(self, seed: int | None = None, episode_id: str | None = None, split: str | None = None,
              index: int | None = None, task_index: int | None = None, **kwargs: Any) -> VerifiersObservation:
        self.close()
        split = split or self.list_splits()[0]["name"]
        rows = dataset_rows(self.vf_env, split)
        if index is None:
            index = task_index
        if index is None:
            index = (seed if seed is not None else random.randrange(1 << 30)) % len(rows)
        if not 0 <= index < len(rows):
            raise IndexError(f"task index {index} is out of range: split {split!r} has {len(rows)} rows")
        row = dict(rows[index])
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0, source_type="verifiers",
                            split=split, index=index, example_id=row.get("example_id", index))
        self._meta = {"source_type": "verifiers", "source": self.source, "split": split, "index": index,
                      "example_id": plain(row.get("example_id", index))}
        self._seen = 0
        self._rollout = _Rollout(self.vf_env, row)
        return self._advance(None)

    def step(self, action: VerifiersAction, timeout_s: float | None = None, **kwargs: Any) -> VerifiersObservation:
        if self._rollout is None:
            raise RuntimeError("Call reset() before stepping a verifiers environment")
        if not isinstance(action, VerifiersAction):
            action = VerifiersAction.model_validate(action)
        self._state.step_count += 1
        self._rollout.answer(action)
        return self._advance(timeout_s)

    def _advance(self, timeout_s: float | None) -> VerifiersObservation:
        assert self._rollout is not None
        kind, payload = self._rollout.next_event(timeout_s or DEFAULT_TURN_TIMEOUT_S)
        if kind == "error":
            self._rollout = None
            raise payload
        if kind == "turn":
            prompt, tools = payload
            messages = plain(prompt)
            new = messages[self._seen:] if self._seen else []
            self._seen = len(messages)
            return VerifiersObservation(messages=messages, new_messages=new, tools=plain(tools), done=False,
                                        reward=None, metadata=dict(self._meta))
        state, self._rollout = payload, None
        messages = plain(state.get("prompt") or []) + plain(state.get("completion") or [])
        metadata = dict(self._meta, metrics=plain(state.get("metrics") or {}),
                        stop_condition=state.get("stop_condition"))
        if state.get("error") is not None:
            metadata["error"] = str(state["error"])
        new = messages[self._seen:] if self._seen else []
        reward = state.get("reward")
        return VerifiersObservation(messages=messages, new_messages=new, done=True,
                                    reward=float(reward) if reward is not None else None, metadata=metadata)

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        if self._rollout is not None:
            self._rollout.cancel()
            self._rollout = None
