"""Typed client for the echo environment."""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult, split_observation
from openenv.core.env_client import EnvClient
from openenv.envs.echo.models import EchoAction, EchoObservation, EchoState

__all__ = ["EchoEnv"]


class EchoEnv(EnvClient[EchoAction, EchoObservation, EchoState]):
    """``with EchoEnv(base_url=...) as env: env.step(EchoAction(message="hi"))`` (or ``async with`` / ``await``)."""

    def _step_payload(self, action: EchoAction) -> dict[str, Any]:
        return {"message": action.message}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[EchoObservation]:
        fields, metadata = split_observation(payload)  # 0.3's and 0.10's shapes alike
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        obs = EchoObservation(**fields, reward=reward, done=done, metadata=metadata)
        return StepResult(observation=obs, reward=reward, done=done, metadata=metadata)

    def _parse_state(self, payload: dict[str, Any]) -> EchoState:
        return EchoState(**payload)
