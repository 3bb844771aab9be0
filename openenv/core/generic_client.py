"""``GenericEnvClient``: drive any environment with plain dict actions, no subclass needed."""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult, step_metadata
from openenv.core.env_client import EnvClient
from openenv.core.wire import to_jsonable

__all__ = ["GenericAction", "GenericEnvClient"]


class GenericAction(dict):
    """A dict built from keywords, for ``GenericEnvClient.step`` (the published 0.10 name).

    ``GenericAction(code="x = 1", metadata={"tag": "t"})`` is ``{"code": "x = 1", "metadata": {...}}``.
    """

    def __init__(self, **fields: Any) -> None:
        super().__init__(fields)

    def __repr__(self) -> str:
        return "GenericAction(" + ", ".join(f"{k}={v!r}" for k, v in self.items()) + ")"


class GenericEnvClient(EnvClient[dict, dict, dict]):
    """Actions are dicts (or models/dataclasses); observations and state come back as dicts.

    The observation is the server's dict as sent (a 0.10 server nests ``metadata`` in it);
    ``StepResult.metadata`` is filled from either shape.
    """

    def _step_payload(self, action: Any) -> dict[str, Any]:
        data = to_jsonable(action)
        if not isinstance(data, dict):
            raise TypeError("GenericEnvClient actions must be JSON objects (dicts)")
        return data

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[dict]:
        return StepResult(
            observation=payload.get("observation") or {},
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
            metadata=step_metadata(payload),
        )

    def _parse_state(self, payload: dict[str, Any]) -> dict:
        return payload
