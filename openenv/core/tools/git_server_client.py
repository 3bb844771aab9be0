"""``GitServerClient``: repositories of a shared Gitea server cloned into a per-task workspace.

Many environment instances share one Gitea; each clones what it needs into its own workspace and
resets it with git (checkout, hard reset, clean) instead of cloning again. Git runs with a private
global config (``GIT_CONFIG_GLOBAL``: identity and a credential store for the server) in a
temporary folder of this client, so the user's ``~/.gitconfig`` is never read or written. Git
itself is the only requirement; the HTTP calls (readiness, repository list) go through httpx.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import httpx

__all__ = ["GitServerClient", "RepoInfo"]


@dataclass
class RepoInfo:
    """A repository: its name, web URL, commit and clone URL."""

    name: str
    url: str
    commit: str
    clone_url: str


class GitServerClient:
    """Client of a Gitea server (``gitea_url``, basic-auth ``username``/``password``) whose
    repositories are cloned under ``workspace_dir`` (created if missing).

    Call ``wait_for_ready()`` first: ``list_repositories`` and ``clone_to_workspace`` refuse to run
    before the server answered (RuntimeError).
    """

    def __init__(self, gitea_url: str, username: str, password: str, workspace_dir: str = "/workspace") -> None:
        self.gitea_url = gitea_url.rstrip("/")
        self.username = username
        self.password = password
        self.workspace_dir = Path(workspace_dir)
        self.is_ready = False
        parsed = urlparse(self.gitea_url)
        self.domain = parsed.hostname or "localhost"
        self.port = parsed.port or 3000
        os.makedirs(self.workspace_dir, exist_ok=True)
        self._configure_git()

    def _configure_git(self) -> None:
        """Write this client's git config and credentials (mode 0600) into its own temp folder."""
        folder = Path(tempfile.mkdtemp(prefix="openenv-git-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        credentials = folder / "git-credentials"
        credentials.write_text(f"http://{self.username}:{self.password}@{self.domain}:{self.port}\n")
        credentials.chmod(0o600)
        config = folder / "gitconfig"
        config.write_text(
            "[user]\n"
            f"    name = {self.username}\n"
            f"    email = {self.username}@local.env\n"
            "[init]\n"
            "    defaultBranch = main\n"
            "[credential]\n"
            f"    helper = store --file {credentials}\n"
        )
        # never wait on a password prompt: a refused credential fails the command instead
        self._git_env = {**os.environ, "GIT_CONFIG_GLOBAL": str(config), "GIT_TERMINAL_PROMPT": "0"}

    def _git(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=None if cwd is None else str(cwd), env=self._git_env,
                              capture_output=True, text=True)

    def wait_for_ready(self, timeout: int = 30) -> bool:
        """Poll the server's front page (5 s per try, 1 s apart) until it answers 2xx/3xx, at most
        ``timeout`` seconds; returns whether it did (and sets ``is_ready``)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if httpx.get(f"{self.gitea_url}/", timeout=5, follow_redirects=True).status_code < 400:
                    self.is_ready = True
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(1)
        return False

    def list_repositories(self) -> list[dict[str, str]]:
        """The user's repositories (``name``, ``full_name``, ``clone_url``, ``description``); ``[]``
        when the server's answer is not a list of repositories."""
        if not self.is_ready:
            raise RuntimeError("Gitea server is not ready")
        try:
            reply = httpx.get(f"{self.gitea_url}/api/v1/user/repos", auth=(self.username, self.password), timeout=30)
            repos = reply.json() if reply.is_success else []
            return [{"name": r["name"], "full_name": r["full_name"], "clone_url": r["clone_url"],
                     "description": r.get("description", "")} for r in repos]
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return []

    def clone_to_workspace(self, repo_name: str, target_dir: str | None = None, commit: str = "main") -> str:
        """A fresh clone of ``repo_name`` in ``workspace/<target_dir or repo_name>`` (replacing what
        was there) at ``commit``; returns its path. RuntimeError names git's error."""
        if not self.is_ready:
            raise RuntimeError("Gitea server is not ready")
        target = self.workspace_dir / (target_dir or repo_name)
        if target.exists():
            shutil.rmtree(target)
        done = self._git("clone", f"{self.gitea_url}/{self.username}/{repo_name}.git", str(target))
        if done.returncode != 0:
            raise RuntimeError(f"Clone failed: {done.stderr}")
        if commit != "main":
            done = self._git("checkout", commit, cwd=target)
            if done.returncode != 0:
                raise RuntimeError(f"Checkout failed: {done.stderr}")
        return str(target)

    def reset_workspace(self, repo_name: str, commit: str = "main") -> bool:
        """Bring ``workspace/<repo_name>`` back to ``commit`` without cloning: fetch, forced checkout, hard
        reset (to ``origin/<commit>`` for a branch other than main, else to ``commit``), then remove
        untracked and ignored files. Returns True; RuntimeError when a step fails."""
        repo = self.workspace_dir / repo_name
        if not repo.exists():
            raise RuntimeError(f"Repository not found in workspace: {repo_name}")
        self._git("fetch", "--all", cwd=repo)
        # --force: edits the agent left in tracked files do not block the switch (0.10's plain
        # checkout fails there, "would be overwritten by checkout"); the hard reset drops them anyway
        done = self._git("checkout", "--force", commit, cwd=repo)
        if done.returncode != 0:
            raise RuntimeError(f"Checkout failed: {done.stderr}")
        if self._git("reset", "--hard", commit if commit == "main" else f"origin/{commit}", cwd=repo).returncode != 0:
            done = self._git("reset", "--hard", commit, cwd=repo)  # a commit id, not a branch
            if done.returncode != 0:
                raise RuntimeError(f"Reset failed: {done.stderr}")
        self._git("clean", "-fdx", cwd=repo)
        return True

    def execute_git_command(self, command: str, working_dir: str = "") -> tuple[int, str, str]:
        """Run ``git <command>`` (shell-style words) in the workspace or a folder of it; returns
        ``(exit code, stdout, stderr)``."""
        where = self.workspace_dir / working_dir if working_dir else self.workspace_dir
        if not where.exists():
            return (1, "", f"Working directory does not exist: {where}")
        done = self._git(*shlex.split(command), cwd=where)
        return (done.returncode, done.stdout, done.stderr)

    def get_current_commit(self, repo_name: str) -> str:
        """The commit id checked out in ``workspace/<repo_name>``."""
        repo = self.workspace_dir / repo_name
        if not repo.exists():
            raise RuntimeError(f"Repository not found: {repo_name}")
        done = self._git("rev-parse", "HEAD", cwd=repo)
        if done.returncode != 0:
            raise RuntimeError(f"Failed to get commit: {done.stderr}")
        return done.stdout.strip()

    def workspace_exists(self, repo_name: str) -> bool:
        """Whether ``workspace/<repo_name>`` exists."""
        return (self.workspace_dir / repo_name).exists()
