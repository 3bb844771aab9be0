"""A git environment using ``openenv.core.tools`` as the catalogue's git_env does (same import
lines), served by our server over a loopback Gitea stand-in and driven by its client."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from tests.server_utils import running_server


@pytest.fixture
def git_env_url(gitea: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GITEA_URL", gitea["url"])
    monkeypatch.setenv("GITEA_USERNAME", gitea["user"])
    monkeypatch.setenv("GITEA_PASSWORD", gitea["password"])
    monkeypatch.setenv("WORKSPACE_DIR", str(tmp_path / "workspace"))
    monkeypatch.setenv("GIT_TASKS", f"old=demo@{gitea['commits']['first']},new=demo@main")
    sys.modules.pop("tests.tools.git_env.server.app", None)
    app = importlib.import_module("tests.tools.git_env.server.app").app
    with running_server(app) as url:
        yield url


def test_git_env_clones_resets_and_runs_git(git_env_url: str, gitea: dict, tmp_path: Path) -> None:
    from tests.tools.git_env import GitAction, GitEnv

    with GitEnv(base_url=git_env_url).sync() as env:
        first = env.reset()
        assert first.observation.success and "Git task environment ready" in first.observation.message
        assert env.state().gitea_ready is True
        listed = env.step(GitAction(action_type="list_repos")).observation
        assert listed.success and [r["name"] for r in listed.repos] == ["demo"]
        cloned = env.step(GitAction(action_type="clone_repo", repo_name="demo")).observation
        assert cloned.success and cloned.output == str(tmp_path / "workspace" / "demo")
        log = env.step(GitAction(action_type="execute_git_command", command="log --format=%s", working_dir="demo"))
        assert log.observation.output.splitlines() == ["second", "first"]
        bad = env.step(GitAction(action_type="execute_git_command", command="checkout nowhere", working_dir="demo"))
        assert not bad.observation.success and "nowhere" in bad.observation.error
        old = env.reset(task_id="old").observation
        assert old.success and old.output == f"Commit: {gitea['commits']['first']}"
        (tmp_path / "workspace" / "demo" / "a.txt").write_text("agent edit\n")
        new = env.reset(task_id="new").observation
        assert new.success and new.output == f"Commit: {gitea['commits']['second']}"
        assert (tmp_path / "workspace" / "demo" / "a.txt").read_text() == "two\n"
        assert env.state().step_count == 0
        missing = env.step(GitAction(action_type="clone_repo", repo_name="missing")).observation
        assert not missing.success and "Clone failed" in missing.error


# The openenv import lines of the catalogue's envs/git_env (client.py, server/app.py,
# server/git_task_environment.py), as they are written there.
CATALOGUE_IMPORTS = """
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.containers.runtime import ContainerProvider
from openenv.core.env_server import create_app
from openenv.core.env_server import Action, Environment, Observation
from openenv.core.tools.git_server_client import GitServerClient
from openenv.core.tools import GitServerClient, PyExecutor, RepoInfo
"""


def test_the_catalogue_import_lines_load() -> None:
    names: dict = {}
    exec(compile(CATALOGUE_IMPORTS, "git_env-imports", "exec"), names)
    assert names["GitServerClient"].__module__ == "openenv.core.tools.git_server_client"
    assert callable(names["create_app"]) and issubclass(names["EnvClient"], object)
