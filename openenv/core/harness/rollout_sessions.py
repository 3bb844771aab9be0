"""Resource sessions: what a harness drives during one rollout, and where its reward comes from.

``ResourceSession`` is the per-rollout contract (initial messages, tool manifest, ``call_tool``,
``verify``, ``close``); ``ResourceSessionFactory`` makes one per rollout; ``StepEnvSessionAdapter``
turns any reset/step/state client into one. ``_resolve_env_reward`` picks the final reward: the
last reward a tool result carried, else ``verify``'s, and refuses a ``verify`` that disagrees.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from openenv.core.client_types import StepResult
from openenv.core.env_server.mcp_types import Tool
from openenv.core.env_server.types import State

from .rollout_types import RESERVED_TOOL_NAMES, HarnessRolloutResult, Message, ToolResult, VerifyResult

__all__ = ["ResourceSession", "ResourceSessionFactory", "StepEnvSessionAdapter", "_resolve_env_reward"]


class ResourceSession(ABC):
    """One rollout's environment/resources as a harness sees them."""

    @abstractmethod
    def initial_messages(self) -> list[Message]:
        """The prompt messages the harness starts from."""

    @abstractmethod
    def list_tools(self) -> list[Tool]:
        """The MCP-style tools this session offers."""

    @abstractmethod
    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool (``KeyError`` for an unknown or reserved name)."""

    @abstractmethod
    def verify(self, transcript: list[Message], final_state: Any | None = None) -> VerifyResult:
        """Finish the rollout once the harness stopped: metrics, artifacts, and the reward the
        environment already produced (forwarded, never synthesised)."""

    @abstractmethod
    def close(self) -> None:
        """Release the session's resources."""


SessionT = TypeVar("SessionT", bound=ResourceSession)


class ResourceSessionFactory(ABC, Generic[SessionT]):
    """Makes one isolated session per rollout (generic over the session type it returns)."""

    @abstractmethod
    def create(self, task: Any, seed: int | None = None, episode_id: str | None = None) -> SessionT:
        """A fresh session for ``task``."""


def _serialize_for_message(value: Any) -> str:
    """Tool data as the text of a ``tool`` message (strings as they are, the rest as sorted JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _state_to_data(state: Any) -> Any:
    return state.model_dump() if hasattr(state, "model_dump") else state


def _tool_result_reward(result: ToolResult) -> float | None:
    reward = result.metadata.get("reward")
    if reward is None and isinstance(result.data, dict):
        reward = result.data.get("reward")
    return None if reward is None else float(reward)


def _resolve_env_reward(rollout: HarnessRolloutResult, verify: VerifyResult) -> float:
    """The rollout's environment reward: the last one a tool result carried, else ``verify``'s.

    Raises ``ValueError`` when ``verify`` reports a different reward than the trace, or when
    neither has one (a reward is never made up here).
    """
    from_trace = next(
        (r for r in (_tool_result_reward(e.result) for e in reversed(rollout.tool_trace)) if r is not None), None
    )
    from_verify = None if verify.env_reward is None else float(verify.env_reward)
    if (from_trace is not None and from_verify is not None
            and not math.isclose(from_verify, from_trace, rel_tol=1e-9, abs_tol=1e-6)):  # fmt: skip
        raise ValueError("verify.env_reward must forward the environment reward from the rollout")
    if from_trace is not None:
        return from_trace
    if from_verify is not None:
        return from_verify
    raise ValueError("rollout did not produce an environment reward")


StepBuilder = Callable[[str, dict[str, Any], StepResult[Any], Any], ToolResult]
VerifyBuilder = Callable[[list[Message], Any, "StepResult[Any] | None", Any], VerifyResult]


class StepEnvSessionAdapter(ResourceSession):
    """A reset/step/state client (async clients through ``.sync()``) as a resource session.

    The client is reset on construction (``seed``/``episode_id`` join ``reset_kwargs``); each tool
    call becomes ``client.step(action_builder(name, arguments))``. ``tool_specs`` may not use a
    reserved name (``ValueError``).
    """

    def __init__(
        self,
        client: Any,
        *,
        task: Any = None,
        seed: int | None = None,
        episode_id: str | None = None,
        tool_specs: list[Tool],
        action_builder: Callable[[str, dict[str, Any]], Any],
        initial_messages_builder: Callable[[StepResult[Any], Any], list[Message]],
        tool_result_builder: StepBuilder | None = None,
        verify_builder: VerifyBuilder | None = None,
        reset_kwargs: dict[str, Any] | None = None,
    ) -> None:
        sync = getattr(client, "sync", None)
        self._client = sync() if callable(sync) else client
        self._task = task
        self._tool_specs = list(tool_specs)
        self._tools_by_name = {t.name: t for t in self._tool_specs}
        self._action_builder = action_builder
        self._initial_messages_builder = initial_messages_builder
        self._tool_result_builder = tool_result_builder or self._default_tool_result
        self._verify_builder = verify_builder or self._default_verify
        self._closed = False
        clash = sorted(set(self._tools_by_name) & RESERVED_TOOL_NAMES)
        if clash:
            raise ValueError("Tool names are reserved for orchestration controls: " + ", ".join(clash))
        payload = dict(reset_kwargs or {})
        if seed is not None:
            payload.setdefault("seed", seed)
        if episode_id is not None:
            payload.setdefault("episode_id", episode_id)
        self._last_result: StepResult[Any] | None = None
        self._last_state: Any = None
        try:
            self._initial_result: StepResult[Any] = self._client.reset(**payload)
            self._last_state = self._read_state()
        except Exception:
            self.close()
            raise

    def _read_state(self) -> Any:
        state = getattr(self._client, "state", None)
        return state() if callable(state) else None

    def _default_tool_result(self, tool_name: str, arguments: dict[str, Any], result: StepResult[Any],
                             state: Any) -> ToolResult:  # fmt: skip
        data = {"tool_name": tool_name, "arguments": dict(arguments), "observation": result.observation,
                "reward": result.reward, "done": result.done}  # fmt: skip
        return ToolResult(data=data, done=bool(result.done),
                          metadata={"reward": result.reward, "state": _state_to_data(state)})  # fmt: skip

    def _default_verify(self, transcript: list[Message], final_state: Any, last: StepResult[Any] | None,
                        state: Any) -> VerifyResult:  # fmt: skip
        metrics: dict[str, Any] = {}
        if isinstance(state, State):
            metrics["step_count"] = state.step_count
        elif isinstance(state, dict) and "step_count" in state:
            metrics["step_count"] = state["step_count"]
        return VerifyResult(
            env_reward=None if last is None else last.reward,
            done=False if last is None else bool(last.done),
            metrics=metrics,
            artifacts={"final_state": _state_to_data(state), "transcript_length": len(transcript)},
        )

    def initial_messages(self) -> list[Message]:
        return list(self._initial_messages_builder(self._initial_result, self._task))

    def list_tools(self) -> list[Tool]:
        return list(self._tool_specs)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name in RESERVED_TOOL_NAMES:
            raise KeyError(f"Reserved orchestration tool: {name}")
        if name not in self._tools_by_name:
            raise KeyError(f"Unknown tool: {name}")
        result = self._client.step(self._action_builder(name, dict(arguments)))
        state = self._read_state()
        self._last_result, self._last_state = result, state
        return self._tool_result_builder(name, dict(arguments), result, state)

    def verify(self, transcript: list[Message], final_state: Any | None = None) -> VerifyResult:
        return self._verify_builder(list(transcript), final_state, self._last_result, self._last_state)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        close = getattr(self._client, "close", None)
        if callable(close):
            close()
