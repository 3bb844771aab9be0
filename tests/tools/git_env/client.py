"""The git environment's client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from .env_types import GitAction, GitObservation, GitState

if TYPE_CHECKING:
    from openenv.core.containers.runtime import ContainerProvider  # noqa: F401


class GitEnv(EnvClient[GitAction, GitObservation, GitState]):
    def _step_payload(self, action: GitAction) -> dict:
        return {"action_type": action.action_type, "repo_name": action.repo_name, "target_dir": action.target_dir,
                "command": action.command, "working_dir": action.working_dir}

    def _parse_result(self, payload: dict) -> StepResult[GitObservation]:
        return StepResult(observation=GitObservation(**payload["observation"]), reward=payload.get("reward"),
                          done=bool(payload.get("done", False)))

    def _parse_state(self, payload: dict) -> GitState:
        return GitState(episode_id=payload.get("episode_id"), step_count=payload.get("step_count", 0),
                        gitea_ready=payload.get("gitea_ready", False),
                        workspace_path=payload.get("workspace_path", "/workspace"))
