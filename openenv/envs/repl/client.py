"""Typed client for the REPL environment: sync (``with REPLEnv(...) as env``) or async (``await``)."""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult, split_observation
from openenv.core.env_client import EnvClient
from openenv.core.sync_client import SyncEnvClient
from openenv.envs.repl.models import REPLAction, REPLObservation, REPLState

__all__ = ["REPLEnv", "SyncREPLEnv"]


class SyncREPLEnv(SyncEnvClient):
    """Blocking REPL client: ``with REPLEnv(base_url=...).sync() as env: env.execute("print(1)")``."""

    def execute(self, code: str, timeout_s: float | None = None) -> StepResult[REPLObservation]:
        """Run one cell."""
        return self.step(REPLAction(code=code), timeout_s=timeout_s)

    def submit_final_answer(self, answer: str) -> StepResult[REPLObservation]:
        """End the episode with ``answer``."""
        return self.step(REPLAction(is_final=True, final_answer=answer))


class REPLEnv(EnvClient[REPLAction, REPLObservation, REPLState]):
    """``with REPLEnv(base_url=...) as env: env.reset(context=...); env.execute("x = 1")`` (or ``await`` them)."""

    _sync_class = SyncREPLEnv

    def _step_payload(self, action: REPLAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"}) | ({"metadata": action.metadata} if action.metadata else {})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[REPLObservation]:
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        fields, metadata = split_observation(payload)
        obs = REPLObservation.model_validate({**fields, "reward": reward, "done": done, "metadata": metadata})
        return StepResult(observation=obs, reward=reward, done=done, metadata=metadata)

    def _parse_state(self, payload: dict[str, Any]) -> REPLState:
        return REPLState.model_validate(payload)

    def execute(self, code: str, timeout_s: float | None = None) -> Any:
        """Run one cell (a result in sync code, an awaitable in async code)."""
        return self.step(REPLAction(code=code), timeout_s=timeout_s)

    def submit_final_answer(self, answer: str) -> Any:
        """End the episode with ``answer``."""
        return self.step(REPLAction(is_final=True, final_answer=answer))

    def sync(self) -> SyncREPLEnv:
        """A blocking wrapper with ``execute`` and ``submit_final_answer`` too."""
        return super().sync()  # type: ignore[return-value]
