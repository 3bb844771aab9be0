"""Typed client for the REPL environment (async; ``.sync()`` for blocking code)."""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.sync_client import SyncEnvClient
from openenv.envs.repl.models import REPLAction, REPLObservation, REPLState

__all__ = ["REPLEnv", "SyncREPLEnv"]


class REPLEnv(EnvClient[REPLAction, REPLObservation, REPLState]):
    """``async with REPLEnv(base_url=...) as env: await env.reset(context=...); await env.execute("x = 1")``."""

    def _step_payload(self, action: REPLAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"}) | ({"metadata": action.metadata} if action.metadata else {})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[REPLObservation]:
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        obs = REPLObservation.model_validate({**payload.get("observation", {}), "reward": reward, "done": done})
        return StepResult(observation=obs, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> REPLState:
        return REPLState.model_validate(payload)

    async def execute(self, code: str, timeout_s: float | None = None) -> StepResult[REPLObservation]:
        """Run one cell."""
        return await self.step(REPLAction(code=code), timeout_s=timeout_s)

    async def submit_final_answer(self, answer: str) -> StepResult[REPLObservation]:
        """End the episode with ``answer``."""
        return await self.step(REPLAction(is_final=True, final_answer=answer))

    def sync(self) -> SyncREPLEnv:
        """A blocking wrapper with ``execute`` and ``submit_final_answer`` too."""
        return SyncREPLEnv(self)


class SyncREPLEnv(SyncEnvClient):
    """Blocking REPL client: ``with REPLEnv(base_url=...).sync() as env: env.execute("print(1)")``."""

    def execute(self, code: str, timeout_s: float | None = None) -> StepResult[REPLObservation]:
        """Run one cell."""
        return self._run(self._client.execute(code, timeout_s=timeout_s))

    def submit_final_answer(self, answer: str) -> StepResult[REPLObservation]:
        """End the episode with ``answer``."""
        return self._run(self._client.submit_final_answer(answer))
