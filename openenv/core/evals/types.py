"""What an evaluation was asked to do (``EvalConfig``) and what it scored (``EvalResult``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EvalConfig", "EvalResult"]

_STRICT = ConfigDict(extra="forbid", validate_assignment=True)


class EvalConfig(BaseModel):
    """Configuration for running an evaluation."""  # also the JSON schema's description, as on 0.10

    model_config = _STRICT

    harness_name: str = Field(description="Name of the evaluation harness")
    harness_version: str = Field(description="Version of the evaluation harness")
    library_versions: dict[str, str] = Field(description="Versions of libraries used in the evaluation")
    dataset: str = Field(description="Name of the dataset to evaluate on")
    eval_parameters: dict[str, Any] = Field(description="Parameters for the evaluation")


class EvalResult(BaseModel):
    """Result of running an evaluation."""

    model_config = _STRICT

    config: EvalConfig = Field(description="Configuration used for the evaluation")
    scores: dict[str, Any] = Field(description="Scores from the evaluation")
