"""Wire-level types: Action, Observation, State and environment metadata (pydantic v2)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Action", "EnvironmentMetadata", "Observation", "State"]


class Action(BaseModel):
    """Base class of an environment's action; unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)

    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form action metadata")


class Observation(BaseModel):
    """Base class of an environment's observation; ``reward``/``done`` travel beside it on the wire."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)

    done: bool = Field(default=False, description="Whether the episode has ended")
    reward: bool | int | float | None = Field(default=None, description="Reward of the last step")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form observation metadata")


class State(BaseModel):
    """Episode state; environments add their own fields."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)

    episode_id: str | None = Field(default=None, description="Identifier of the current episode")
    step_count: int = Field(default=0, ge=0, description="Steps taken in the current episode")


class EnvironmentMetadata(BaseModel):
    """What ``GET /metadata`` answers."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str = ""
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None
