"""``StepResult``: what a client's ``reset``/``step`` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["StepResult"]

ObsT = TypeVar("ObsT")


@dataclass
class StepResult(Generic[ObsT]):
    """An observation with the step's reward and done flag (``metadata`` is additive)."""

    observation: ObsT
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
