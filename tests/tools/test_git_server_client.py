"""GitServerClient for real: git clones, resets and commands against a loopback Gitea stand-in
(tests/tools/fake_gitea.py: bare repositories over git's HTTP protocol, behind basic auth).

What cannot run here: a real Gitea server (its repository migration API, web UI, users); the
client only needs its front page, ``/api/v1/user/repos`` and git over HTTP, which the stand-in serves.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest

from openenv.core.tools import GitServerClient, RepoInfo
from tests.server_utils import free_port


def _client(gitea: dict, tmp_path: Path, password: str | None = None) -> GitServerClient:
    client = GitServerClient(gitea["url"], gitea["user"], password or gitea["password"], str(tmp_path / "ws"))
    assert client.wait_for_ready(timeout=10)
    return client


def test_ready_listing_and_a_clone_with_the_stored_credentials(gitea: dict, tmp_path: Path) -> None:
    client = GitServerClient(gitea["url"] + "/", gitea["user"], gitea["password"], str(tmp_path / "ws"))
    assert (tmp_path / "ws").is_dir() and client.gitea_url == gitea["url"] and not client.is_ready
    with pytest.raises(RuntimeError, match="Gitea server is not ready"):
        client.list_repositories()
    with pytest.raises(RuntimeError, match="Gitea server is not ready"):
        client.clone_to_workspace("demo")
    assert client.wait_for_ready(timeout=10) and client.is_ready
    repos = client.list_repositories()
    assert repos == [{"name": "demo", "full_name": "openenv/demo", "clone_url": f"{gitea['url']}/openenv/demo.git",
                      "description": "the demo repo"}]
    path = client.clone_to_workspace("demo")
    assert path == str(tmp_path / "ws" / "demo") and (Path(path) / "a.txt").read_text() == "two\n"
    assert client.get_current_commit("demo") == gitea["commits"]["second"]
    assert client.workspace_exists("demo") and not client.workspace_exists("other")
    seen = httpx.get(gitea["url"] + "/_requests").json()
    assert any(r["path"].startswith("/openenv/demo.git/") and r["auth"] for r in seen), "git sent the stored credentials"
    assert client.execute_git_command("config user.name", "demo") == (0, "openenv\n", "")  # its own config
    assert client.execute_git_command("config user.email", "demo")[1] == "openenv@local.env\n"


def test_wrong_password_lists_nothing_and_cannot_clone(gitea: dict, tmp_path: Path) -> None:
    client = _client(gitea, tmp_path, password="wrong")
    assert client.list_repositories() == []
    with pytest.raises(RuntimeError, match="Clone failed"):
        client.clone_to_workspace("demo")


def test_clone_at_a_commit_and_into_a_target_dir(gitea: dict, tmp_path: Path) -> None:
    client = _client(gitea, tmp_path)
    first = gitea["commits"]["first"]
    path = client.clone_to_workspace("demo", target_dir="old", commit=first)
    assert Path(path).name == "old" and (Path(path) / "a.txt").read_text() == "one\n"
    assert client.get_current_commit("old") == first
    (Path(path) / "stray.txt").write_text("x")
    again = client.clone_to_workspace("demo", target_dir="old")  # a fresh clone replaces it
    assert not (Path(again) / "stray.txt").exists() and client.get_current_commit("old") == gitea["commits"]["second"]
    with pytest.raises(RuntimeError, match="Checkout failed"):
        client.clone_to_workspace("demo", target_dir="bad", commit="no-such-ref")
    with pytest.raises(RuntimeError, match="Clone failed"):
        client.clone_to_workspace("missing")


def test_reset_workspace_discards_changes_fast(gitea: dict, tmp_path: Path) -> None:
    client = _client(gitea, tmp_path)
    repo = Path(client.clone_to_workspace("demo"))
    (repo / "a.txt").write_text("edited\n")
    (repo / "untracked.txt").write_text("x")
    (repo / ".gitignore").write_text("ignored.log\n")
    (repo / "ignored.log").write_text("x")
    t0 = time.perf_counter()
    assert client.reset_workspace("demo") is True
    elapsed = time.perf_counter() - t0
    assert (repo / "a.txt").read_text() == "two\n" and sorted(p.name for p in repo.iterdir()) == [".git", "a.txt"]
    assert elapsed < 10
    (repo / "a.txt").write_text("dirty again\n")  # a switch over an edited file (0.10's checkout refuses it)
    assert client.reset_workspace("demo", commit="feature")  # a branch: reset to origin/feature
    assert client.get_current_commit("demo") == gitea["commits"]["feature"] and (repo / "f.txt").exists()
    assert client.reset_workspace("demo", commit=gitea["commits"]["first"])  # a commit id: reset to it
    assert client.get_current_commit("demo") == gitea["commits"]["first"]
    with pytest.raises(RuntimeError, match="Checkout failed"):
        client.reset_workspace("demo", commit="no-such-ref")
    with pytest.raises(RuntimeError, match="Repository not found in workspace: nope"):
        client.reset_workspace("nope")


def test_git_commands_in_the_workspace(gitea: dict, tmp_path: Path) -> None:
    client = _client(gitea, tmp_path)
    client.clone_to_workspace("demo")
    code, out, _ = client.execute_git_command("log --format=%s", "demo")
    assert code == 0 and out.splitlines() == ["second", "first"]
    code, out, err = client.execute_git_command("commit -m 'with spaces' --allow-empty", "demo")
    assert code == 0, err
    assert client.execute_git_command("log -1 --format=%s", "demo")[1] == "with spaces\n"
    code, _, err = client.execute_git_command("no-such-subcommand", "demo")
    assert code != 0 and "no-such-subcommand" in err
    assert client.execute_git_command("status", "absent") == (1, "", f"Working directory does not exist: {tmp_path / 'ws' / 'absent'}")
    with pytest.raises(RuntimeError, match="Repository not found: absent"):
        client.get_current_commit("absent")


def test_a_dead_server_is_not_ready_and_the_user_config_is_untouched(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    client = GitServerClient(f"http://127.0.0.1:{free_port()}", "u", "p", str(tmp_path / "ws"))
    assert client.port != 3000 and client.domain == "127.0.0.1"
    t0 = time.monotonic()
    assert client.wait_for_ready(timeout=1) is False and not client.is_ready
    assert time.monotonic() - t0 < 5
    assert not (home / ".gitconfig").exists() and not (home / ".git-credentials").exists()
    config = Path(client._git_env["GIT_CONFIG_GLOBAL"])
    assert oct(os.stat(config.parent / "git-credentials").st_mode & 0o777) == "0o600"


def test_repo_info_is_a_plain_record() -> None:
    info = RepoInfo(name="demo", url="http://g/demo", commit="abc", clone_url="http://g/openenv/demo.git")
    assert info == RepoInfo("demo", "http://g/demo", "abc", "http://g/openenv/demo.git") and info.commit == "abc"
