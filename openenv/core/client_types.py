"""``StepResult``: what a client's ``reset``/``step`` returns; ``split_observation`` reads either wire shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["StepResult", "split_observation", "step_metadata"]

ObsT = TypeVar("ObsT")


@dataclass
class StepResult(Generic[ObsT]):
    """An observation with the step's reward and done flag (``metadata`` is additive)."""

    observation: ObsT
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


def step_metadata(payload: dict[str, Any]) -> dict[str, Any]:
    """The step's metadata from either shape: 0.3's top-level ``metadata`` or 0.10's nested one."""
    top = payload.get("metadata")
    obs = payload.get("observation")
    nested = obs.get("metadata") if isinstance(obs, dict) else None
    if not nested:
        return dict(top) if isinstance(top, dict) else {}
    if not top or top == nested:
        return dict(nested) if isinstance(nested, dict) else {}
    return {**nested, **top} if isinstance(nested, dict) and isinstance(top, dict) else dict(top or {})


def split_observation(payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(observation fields, metadata)`` of a reset/step ``data`` object in either shape.

    The observation's fields never include ``metadata`` (0.10 nests it there; 0.3 lifts it out), so a
    typed client can call ``MyObservation(**fields, metadata=meta)`` against both servers.
    """
    obs = payload.get("observation")
    fields = {k: v for k, v in obs.items() if k != "metadata"} if isinstance(obs, dict) else {}
    return fields, step_metadata(payload)
