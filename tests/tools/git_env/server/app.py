"""The git environment's server (configuration from GITEA_URL, GITEA_USERNAME, GITEA_PASSWORD,
WORKSPACE_DIR, and GIT_TASKS as ``task=repo@commit,...``)."""

from __future__ import annotations

import os

from openenv.core.env_server import create_app

from ..env_types import GitAction, GitObservation
from .git_task_environment import GitTaskEnvironment


def _tasks() -> dict[str, tuple[str, str]]:
    pairs = [item.split("=", 1) for item in os.environ.get("GIT_TASKS", "").split(",") if item]
    return {name: tuple(spec.split("@", 1)) for name, spec in pairs}  # type: ignore[misc]


def create_git_environment() -> GitTaskEnvironment:
    return GitTaskEnvironment(gitea_url=os.getenv("GITEA_URL", "http://localhost:3000"),
                              username=os.getenv("GITEA_USERNAME", "openenv"),
                              password=os.getenv("GITEA_PASSWORD", "openenv"),
                              workspace_dir=os.getenv("WORKSPACE_DIR", "/workspace"), task_repos=_tasks())


app = create_app(create_git_environment, GitAction, GitObservation, env_name="git_env")
