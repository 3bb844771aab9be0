"""Typed client for the echo environment."""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.envs.echo.models import EchoAction, EchoObservation, EchoState

__all__ = ["EchoEnv"]


class EchoEnv(EnvClient[EchoAction, EchoObservation, EchoState]):
    """``async with EchoEnv(base_url=...) as env: await env.step(EchoAction(message="hi"))``."""

    def _step_payload(self, action: EchoAction) -> dict[str, Any]:
        return {"message": action.message}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[EchoObservation]:
        obs = EchoObservation(
            **payload.get("observation", {}),
            reward=payload.get("reward"),
            done=payload.get("done", False),
            metadata=payload.get("metadata") or {},
        )
        return StepResult(observation=obs, reward=payload.get("reward"), done=bool(payload.get("done", False)),
                          metadata=payload.get("metadata") or {})

    def _parse_state(self, payload: dict[str, Any]) -> EchoState:
        return EchoState(**payload)
