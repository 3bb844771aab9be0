"""The typed client of the tic-tac-toe test env (works on ours and on the published 0.10)."""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openspiel_env.models import OpenSpielAction, OpenSpielObservation, OpenSpielState


class OpenSpielEnv(EnvClient[OpenSpielAction, OpenSpielObservation, OpenSpielState]):
    def _step_payload(self, action: OpenSpielAction) -> dict[str, Any]:
        return {"action_id": action.action_id, "game_name": action.game_name}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[OpenSpielObservation]:
        fields = dict(payload.get("observation") or {})
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        obs = OpenSpielObservation(**{k: v for k, v in fields.items() if k in OpenSpielObservation.model_fields},
                                   reward=reward, done=done)
        return StepResult(observation=obs, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> OpenSpielState:
        return OpenSpielState(**payload)
