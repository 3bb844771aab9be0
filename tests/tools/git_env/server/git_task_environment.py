"""The git task environment: each reset brings a task's repository back to its base commit."""

from __future__ import annotations

import uuid

from openenv.core.env_server import Action, Environment, Observation
from openenv.core.tools.git_server_client import GitServerClient

from ..env_types import GitAction, GitObservation, GitState


class GitTaskEnvironment(Environment):
    """Git over a shared Gitea; ``task_repos`` maps a task id to ``(repo name, base commit)``."""

    def __init__(self, gitea_url: str, username: str, password: str, workspace_dir: str = "/workspace",
                 task_repos: dict[str, tuple[str, str]] | None = None) -> None:
        super().__init__()
        self.workspace_dir = workspace_dir
        self.task_repos = task_repos or {}
        self._git = GitServerClient(gitea_url=gitea_url, username=username, password=password,
                                    workspace_dir=workspace_dir)
        self._task: str | None = None
        self._state = GitState(workspace_path=workspace_dir, gitea_ready=self._git.wait_for_ready(timeout=10))

    def reset(self, task_id: str | None = None) -> Observation:
        self._state = GitState(episode_id=str(uuid.uuid4()), step_count=0, gitea_ready=self._git.is_ready,
                               workspace_path=self.workspace_dir)
        self._task = task_id
        if task_id not in self.task_repos:
            return GitObservation(success=True, message="Git task environment ready.",
                                  output=f"Workspace: {self.workspace_dir}")
        repo, commit = self.task_repos[task_id]
        try:
            if self._git.workspace_exists(repo):
                self._git.reset_workspace(repo, commit)
            else:
                self._git.clone_to_workspace(repo, commit=commit)
            head = self._git.get_current_commit(repo)
        except RuntimeError as exc:
            return GitObservation(success=False, message=f"Failed to reset task '{task_id}'", error=str(exc))
        return GitObservation(success=True, message=f"Task '{task_id}' at {repo}@{commit}", output=f"Commit: {head}")

    def step(self, action: Action) -> Observation:
        if not isinstance(action, GitAction):
            raise ValueError(f"Expected GitAction, got {type(action)}")
        self._state.step_count += 1
        try:
            if action.action_type == "list_repos":
                repos = self._git.list_repositories()
                return GitObservation(success=True, message=f"Found {len(repos)} repositories", repos=repos,
                                      output="\n".join(r["name"] for r in repos))
            if action.action_type == "clone_repo":
                path = self._git.clone_to_workspace(action.repo_name, action.target_dir)
                return GitObservation(success=True, message=f"Successfully cloned {action.repo_name}", output=path)
            if action.action_type == "execute_git_command":
                code, out, err = self._git.execute_git_command(action.command, action.working_dir)
                return GitObservation(success=code == 0, message=f"Git command {'succeeded' if code == 0 else 'failed'}",
                                      output=out, error=err)
        except RuntimeError as exc:
            return GitObservation(success=False, message="Action failed", error=str(exc))
        return GitObservation(success=False, message=f"Unknown action_type: {action.action_type}")

    @property
    def state(self) -> GitState:
        return self._state
