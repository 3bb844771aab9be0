"""Fixtures: a loopback Gitea (real git over HTTP) holding one bare repository, ``demo``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests._require import require
from tests.server_utils import running_server

from .fake_gitea import make_bare_repo, make_gitea

USER, PASSWORD = "openenv", "s3cret-pw"


@pytest.fixture(scope="session")
def gitea(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    require(shutil.which("git") is not None, "git (Debian package git, scripts/system)")
    root = tmp_path_factory.mktemp("gitea")
    commits = make_bare_repo(root, USER, "demo")
    with running_server(make_gitea(root, USER, PASSWORD)) as url:
        yield {"url": url, "user": USER, "password": PASSWORD, "commits": commits}
