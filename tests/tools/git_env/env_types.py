"""Action, observation and state of the git environment."""

from __future__ import annotations

from pydantic import Field

from openenv.core.env_server.types import Action, Observation, State


class GitAction(Action):
    """``list_repos``, ``clone_repo`` (repo_name, target_dir) or ``execute_git_command`` (command, working_dir)."""

    action_type: str = "list_repos"
    repo_name: str = ""
    target_dir: str | None = None
    command: str = ""
    working_dir: str = ""


class GitObservation(Observation):
    success: bool = False
    message: str = ""
    output: str = ""
    error: str = ""
    repos: list[dict[str, str]] = Field(default_factory=list)


class GitState(State):
    gitea_ready: bool = False
    workspace_path: str = "/workspace"
