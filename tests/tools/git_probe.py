"""Run under ours or under the published 0.10: drives GitServerClient against a Gitea at argv[1]
(user argv[2], password argv[3], workspace argv[4]) and prints what it returned or raised, as JSON
(the workspace path written as <ws>). Also: the package's names, and PyExecutor without smolagents."""

from __future__ import annotations

import json
import sys

sys.modules["smolagents"] = None  # type: ignore[assignment]  # as if the tools extra were not installed

import openenv.core.tools as tools  # noqa: E402
from openenv.core.tools import GitServerClient, PyExecutor, RepoInfo  # noqa: E402

url, user, password, ws = sys.argv[1:5]
out: list = [sorted(tools.__all__), PyExecutor is None, list(RepoInfo.__dataclass_fields__)]


def call(fn, *args, **kwargs):
    try:
        value = fn(*args, **kwargs)
    except Exception as exc:  # what was raised, as the caller sees it
        value = {"raised": type(exc).__name__, "message": str(exc).split(":")[0]}
    out.append(json.loads(json.dumps(value).replace(ws, "<ws>")))


c = GitServerClient(url, user, password, ws)
out.append([c.gitea_url, c.domain, c.port, c.is_ready, c.username])
call(c.list_repositories)
call(c.clone_to_workspace, "demo")
call(c.wait_for_ready, 10)
call(c.list_repositories)
call(c.clone_to_workspace, "demo")
call(c.get_current_commit, "demo")
call(c.clone_to_workspace, "demo", "old", "HEAD~1")
call(c.get_current_commit, "old")
call(c.execute_git_command, "log --format=%s", "demo")
call(c.execute_git_command, "status --porcelain", "absent")
call(c.reset_workspace, "demo", "feature")
call(c.get_current_commit, "demo")
call(c.reset_workspace, "demo")
call(c.execute_git_command, "rev-parse --abbrev-ref HEAD", "demo")
call(c.reset_workspace, "nope")
call(c.reset_workspace, "demo", "no-such-ref")
call(c.clone_to_workspace, "missing")
call(c.get_current_commit, "absent")
call(c.workspace_exists, "old")
bad = GitServerClient(url, user, "wrong", ws + "-bad")
call(bad.wait_for_ready, 10)
call(bad.clone_to_workspace, "demo")
print(json.dumps(out))
