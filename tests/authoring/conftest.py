"""Authoring fixtures: one scaffolded env per session; Docker fixtures reused from the provider tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.containers.conftest import base_image, docker_engine, docker_provider, project  # noqa: F401

OPENENV = [sys.executable, "-m", "openenv.cli.main"]


def openenv(*args: str, cwd: str | Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the ``openenv`` CLI in a subprocess."""
    return subprocess.run([*OPENENV, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


@pytest.fixture(scope="session")
def scaffold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh env made by ``openenv init guess_number`` (shared: tests must not modify it)."""
    base = tmp_path_factory.mktemp("scaffold")
    done = openenv("init", "guess_number", "--output-dir", str(base))
    assert done.returncode == 0, done.stderr
    return base / "guess_number"
