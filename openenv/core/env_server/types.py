"""Wire-level types (pydantic v2); also serves the published ``openenv.core.env_server.types``.

``Action``/``Observation``/``State`` are the author's base classes. The request, response and
WebSocket message models, enums and ``ConcurrencyConfig`` carry the published 0.10 names and
fields; the server parses frames itself (``ws_route``), these models document them. Field
descriptions and base-class docstrings are the published ones (they appear in JSON schemas), so ``/schema`` answers the same as 0.10's.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_serializer

__all__ = [
    "Action",
    "BaseMessage",
    "CodeExecResult",
    "ConcurrencyConfig",
    "EnvironmentMetadata",
    "GetTaskRangeRequest",
    "GetTaskRequest",
    "HealthResponse",
    "HealthStatus",
    "ListTasksRequest",
    "NumTasksRequest",
    "Observation",
    "ResetRequest",
    "ResetResponse",
    "Scalar",
    "SchemaResponse",
    "ServerCapacityStatus",
    "ServerMode",
    "SessionInfo",
    "State",
    "StepRequest",
    "StepResponse",
    "WSCloseMessage",
    "WSErrorCode",
    "WSErrorResponse",
    "WSIncomingMessage",
    "WSObservationResponse",
    "WSResetMessage",
    "WSStateMessage",
    "WSStateResponse",
    "WSStepMessage",
]

Scalar = Union[int, float, bool]  # noqa: UP007 - a runtime alias, as published


class ServerMode(str, Enum):
    """``simulation`` serves reset/step/state; ``production`` serves only the safe routes and ``/mcp``."""

    SIMULATION = "simulation"
    PRODUCTION = "production"


class HealthStatus(str, Enum):
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    DEGRADED = "degraded"


class WSErrorCode(str, Enum):
    """Error codes of WebSocket ``error`` replies (the published seven, then ours)."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"
    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"
    UNSUPPORTED_FRAME = "UNSUPPORTED_FRAME"
    STEP_BEFORE_RESET = "STEP_BEFORE_RESET"
    TIMEOUT = "TIMEOUT"
    ENV_BUSY = "ENV_BUSY"
    STEP_INTERRUPTED = "STEP_INTERRUPTED"


_MODEL = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)


class Action(BaseModel):
    """Base class for all environment actions.

    All action subclasses should inherit from this base class.
    Uses Pydantic for automatic validation and serialization.
    """

    model_config = _MODEL

    metadata: dict[str, Any] = Field(default_factory=dict, description="Additional metadata for the action")


class Observation(BaseModel):
    """Base class for all environment observations.

    All observation subclasses should inherit from this base class.
    Uses Pydantic for automatic validation and serialization.
    """

    model_config = _MODEL

    done: bool = Field(default=False, description="Whether the episode has terminated")
    reward: bool | int | float | None = Field(default=None, description="Reward signal from the last action")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Additional metadata for the observation")


class State(BaseModel):
    """Base class for environment state.

    Represents internal environment state, separate from observations.
    """

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)

    episode_id: str | None = Field(default=None, description="Unique identifier for the current episode")
    step_count: int = Field(default=0, ge=0, description="Number of steps taken in the current episode")


class EnvironmentMetadata(BaseModel):
    """What ``GET /metadata`` answers."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str = ""
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None


class BaseMessage(BaseModel):
    """Base of the published message models: unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class CodeExecResult(BaseMessage):
    """Result of code execution containing stdout, stderr, and exit code."""

    stdout: str = Field(description="Standard output from code execution")
    stderr: str = Field(description="Standard error from code execution")
    exit_code: int = Field(description="Exit code from code execution")


class ConcurrencyConfig(BaseMessage):
    """Session cap and idle timeout, as ``create_app(..., concurrency_config=...)`` takes them."""

    max_concurrent_envs: int = Field(default=1, ge=1, description="Sessions served at once")
    session_timeout: float | None = Field(default=None, gt=0, description="Idle seconds before a session closes")


class ServerCapacityStatus(BaseMessage):
    active_sessions: int = Field(ge=0)
    max_sessions: int = Field(ge=1)

    @property
    def available_slots(self) -> int:
        return self.max_sessions - self.active_sessions

    @property
    def is_at_capacity(self) -> bool:
        return self.available_slots <= 0

    @classmethod
    def from_counts(cls, active: int, max_sessions: int) -> ServerCapacityStatus:
        return cls(active_sessions=active, max_sessions=max_sessions)


class SessionInfo(BaseMessage):
    session_id: str
    created_at: float
    last_activity_at: float
    step_count: int = Field(default=0, ge=0)
    environment_type: str


class HealthResponse(BaseMessage):
    status: HealthStatus = HealthStatus.HEALTHY


class SchemaResponse(BaseMessage):
    """``GET /schema``; ``reset_observation`` is present only when declared."""

    action: dict[str, Any]
    observation: dict[str, Any]
    state: dict[str, Any]
    reset_observation: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _omit_undeclared_reset(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if self.reset_observation is None:
            data.pop("reset_observation", None)
        return data


class ResetRequest(BaseModel):
    """``POST /reset`` body: seed, episode_id and the env's own reset kwargs."""

    model_config = ConfigDict(extra="allow")

    seed: int | None = Field(default=None, ge=0)
    episode_id: str | None = Field(default=None, max_length=255)


class StepRequest(BaseModel):
    """``POST /step`` body."""

    model_config = ConfigDict(extra="allow")

    action: dict[str, Any]
    timeout_s: float | None = Field(default=None, gt=0)
    request_id: str | None = Field(default=None, max_length=255)


class ListTasksRequest(BaseMessage):
    """``POST /{env_name}/tasks`` body (the 0.10 Task API)."""

    split: str = Field(description="Task split name")


class NumTasksRequest(BaseMessage):
    """``POST /{env_name}/num_tasks`` body."""

    split: str = Field(description="Task split name")


class GetTaskRequest(BaseMessage):
    """``POST /{env_name}/task`` body."""

    split: str = Field(description="Task split name")
    index: int = Field(description="Task index within the split")


class GetTaskRangeRequest(BaseMessage):
    """``POST /{env_name}/task_range`` body: ``start`` inclusive, ``stop`` exclusive (``None``: open)."""

    split: str = Field(description="Task split name")
    start: int | None = Field(default=None, description="Inclusive start index")
    stop: int | None = Field(default=None, description="Exclusive stop index")


class ResetResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    observation: dict[str, Any]
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] | None = None


class StepResponse(ResetResponse):
    pass


class WSResetMessage(BaseMessage):
    type: Literal["reset"] = "reset"
    data: dict[str, Any] = Field(default_factory=dict)


class WSStepMessage(BaseMessage):
    type: Literal["step"] = "step"
    data: dict[str, Any]


class WSStateMessage(BaseMessage):
    type: Literal["state"] = "state"


class WSCloseMessage(BaseMessage):
    type: Literal["close"] = "close"


WSIncomingMessage = Annotated[
    Union[WSResetMessage, WSStepMessage, WSStateMessage, WSCloseMessage],  # noqa: UP007
    Field(discriminator="type"),
]


class WSObservationResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["observation"] = "observation"
    data: dict[str, Any]


class WSStateResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["state"] = "state"
    data: dict[str, Any]


class WSErrorResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["error"] = "error"
    data: dict[str, Any]
