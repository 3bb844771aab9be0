"""GitServerClient against the published 0.10 (its venv, its curl-based client) on the same
loopback Gitea: the same calls give the same results and errors; both packages export the same
names and give ``PyExecutor = None`` without smolagents."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.peer010 import _clean_env, peer010_python

PROBE = Path(__file__).parent / "git_probe.py"
ROOT = Path(__file__).resolve().parents[2]


def _probe(python: str, gitea: dict, ws: Path) -> list:
    ours = python == sys.executable
    proc = subprocess.run([python, *([] if ours else ["-P"]), str(PROBE), gitea["url"], gitea["user"],
                           gitea["password"], str(ws)], cwd=str(ROOT) if ours else "/", capture_output=True,
                          text=True, timeout=120, env=_clean_env({"PYTHONPATH": str(ROOT)} if ours else None))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_git_server_client_behaves_as_published(gitea: dict, tmp_path: Path) -> None:
    theirs = _probe(peer010_python(), gitea, tmp_path / "theirs")
    ours = _probe(sys.executable, gitea, tmp_path / "ours")
    assert ours == theirs
    assert theirs[0] == ["GitServerClient", "PyExecutor", "RepoInfo"] and theirs[1] is True
    assert theirs[6] is True and theirs[8] == "<ws>/demo" and theirs[9] == gitea["commits"]["second"]
