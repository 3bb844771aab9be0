"""The data of a whole-episode harness rollout (0.10's ``openenv.core.harness.rollout`` records).

Plain dataclasses and protocols, no behaviour: what a session's tools return (``ToolResult``), what
``verify()`` forwards (``VerifyResult``), what a harness emits (``RolloutEvent``, ``ToolTraceEntry``,
``HarnessRolloutResult``), how one model sample looks (``ModelStep`` -> ``ModelStepResult``), the
limits of a run (``HarnessRunLimits``) and the loop-owning session contracts (``TraceEntry``,
``LoopOwningSession``, ``TrainableSession``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, runtime_checkable

from openenv.core.env_server.mcp_types import Tool
from openenv.core.llm_client import LLMResponse

from .training import TrainingTrace

__all__ = [
    "RESERVED_TOOL_NAMES",
    "HarnessRolloutResult",
    "HarnessRunLimits",
    "LoopOwningSession",
    "Message",
    "ModelStep",
    "ModelStepResult",
    "RolloutEvent",
    "ToolResult",
    "ToolTraceEntry",
    "TraceEntry",
    "TrainableSession",
    "VerifyResult",
]

Message = dict[str, Any]
# The orchestration controls a harness never reaches as tools.
RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})


@dataclass
class ToolResult:
    """What one session tool call returned: its data, whether the episode ended, extra metadata
    (``metadata["reward"]`` is the environment's reward when it gave one) and an error text."""

    data: Any = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass
class VerifyResult:
    """A finished rollout's outcome. ``env_reward`` forwards the reward the environment produced;
    the orchestration layer never invents one."""

    env_reward: float | None = None
    done: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, Any] = field(default_factory=dict)


@dataclass
class RolloutEvent:
    """Something a harness did while driving a rollout (``model_response``, ``tool_call``...)."""

    type: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolTraceEntry:
    """One tool call the harness made and its result."""

    tool_name: str
    arguments: dict[str, Any]
    result: ToolResult


@dataclass
class ModelStepResult:
    """One white-box model sample: the reply, and the engine's token ids/logprobs when known."""

    response: LLMResponse
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)


@dataclass
class HarnessRolloutResult:
    """Everything a harness-driven rollout produced (transcript, tool trace, events, tokens)."""

    messages: list[Message] = field(default_factory=list)
    tool_trace: list[ToolTraceEntry] = field(default_factory=list)
    events: list[RolloutEvent] = field(default_factory=list)
    done: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)


@dataclass
class HarnessRunLimits:
    """Bounds of one rollout: model turns, tool calls per turn and in total, sampling overrides."""

    max_turns: int = 10
    max_tool_calls_per_turn: int | None = None
    max_total_tool_calls: int | None = None
    sampling: dict[str, Any] = field(default_factory=dict)


class ModelStep(Protocol):
    """Samples the next model turn for a white-box harness: ``(messages, tools, sampling)``."""

    def __call__(self, messages: list[Message], tools: list[Tool], sampling: dict[str, Any]) -> ModelStepResult: ...


class TraceEntry(TypedDict, total=False):
    """One model call captured from a loop-owning rollout (every key optional).

    ``prompt_token_ids`` is the engine's own tokenization of what the model saw: a consumer that
    has it uses it rather than re-rendering the prompt. ``completion_token_ids`` and
    ``per_token_logps`` align one to one; ``completion_tokens`` holds ``"token_id:N"`` strings from
    engines that send no ids. ``loss_mask`` covers prompt + completion (1 = trainable). ``reward``
    mirrors ``verify()`` and only an environment sets it: ``None`` means unscored, never 0.0, so
    read it with ``.get()``.
    """

    request: dict[str, Any]
    response: dict[str, Any]
    prompt_token_ids: list[int]
    completion_token_ids: list[int]
    completion_tokens: list[str]
    per_token_logps: list[float]
    loss_mask: list[int]
    reward: float | None
    metadata: dict[str, Any]


@runtime_checkable
class LoopOwningSession(Protocol):
    """A session whose agent runs its own loop: wait for it (exit code), then read its trace."""

    def wait_for_completion(self, timeout_s: float | None = ...) -> int: ...

    def fetch_proxy_trace(self) -> list[TraceEntry]: ...


@runtime_checkable
class TrainableSession(Protocol):
    """A loop-owning session that hands back validated, masked engine captures."""

    def wait_for_completion(self, timeout_s: float | None = ...) -> int: ...

    def fetch_training_trace(self) -> TrainingTrace: ...
