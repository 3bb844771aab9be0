"""Validated token captures that a loop-owning session hands to a trainer (0.10's names).

``TrainingTurn`` is one engine call (prompt ids, sampled ids, their logprobs, and a loss mask over
prompt + completion); ``TrainingTrace`` is the selected calls of one rollout, each with a unique
``node_id``. Both refuse malformed captures at construction (``ValueError``), with the capture
checks' codes (``openenv.capture.checks``). Rewards come from ``verify()``, not from here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from openenv.capture.checks import validate_training_turn

__all__ = ["TrainingTrace", "TrainingTurn", "validate_training_turn"]


class TrainingTurn(BaseModel):
    """One engine call; ``loss_mask`` covers ``prompt_token_ids + completion_token_ids``."""

    model_config = ConfigDict(strict=True, extra="forbid")

    node_id: str = Field(min_length=1)
    prompt_token_ids: list[int]
    completion_token_ids: list[int]
    per_token_logps: list[float]
    loss_mask: list[int]
    request: dict[str, Any] = Field(default_factory=dict)
    response: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def validate_capture(self) -> TrainingTurn:
        validate_training_turn(self.prompt_token_ids, self.completion_token_ids, self.per_token_logps, self.loss_mask)
        return self


class TrainingTrace(BaseModel):
    """The agent calls of one rollout selected for training (zero-masked turns stay as context)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    schema_version: Literal[1] = 1
    turns: list[TrainingTurn]

    @model_validator(mode="after")
    def unique_calls(self) -> TrainingTrace:
        ids = [t.node_id for t in self.turns]
        if len(set(ids)) != len(ids):
            raise ValueError("training trace contains duplicate node_ids")
        return self

    @classmethod
    def from_entries(cls, entries: list[dict[str, Any]]) -> TrainingTrace:
        """Build from producer-selected ``TraceEntry`` dicts (``metadata["node_id"]`` names each);
        nothing is inferred: missing tokens or masks are an error."""
        turns = []
        for entry in entries:
            turns.append(TrainingTurn(
                node_id=entry["metadata"]["node_id"], prompt_token_ids=entry["prompt_token_ids"],
                completion_token_ids=entry["completion_token_ids"], per_token_logps=entry["per_token_logps"],
                loss_mask=entry["loss_mask"], request=entry.get("request", {}), response=entry.get("response", {}),
                metadata=entry.get("metadata", {}),
            ))  # fmt: skip
        return cls(turns=turns)

    def to_trace_entries(self) -> list[dict[str, Any]]:
        """The turns as ``TraceEntry`` dicts (``node_id`` back inside ``metadata``)."""
        out = []
        for turn in self.turns:
            entry = turn.model_dump(exclude={"node_id"})
            entry["metadata"] = {**turn.metadata, "node_id": turn.node_id}
            out.append(entry)
        return out
