"""CLI fixtures: the ``openenv`` command in a subprocess with a clean hub environment, and a
loopback hub (``fake_hub``) to point ``HF_ENDPOINT`` at."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.fake_hub import TOKEN, FakeHub
from tests.server_utils import running_server

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, cwd: str | Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """``openenv ARGS`` in a subprocess; no saved hub login is seen (HF_HOME is private)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    base |= {"PYTHONPATH": str(ROOT), "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "0"}
    return subprocess.run([sys.executable, "-m", "openenv.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=base | (env or {}))


@pytest.fixture
def fake_hub(tmp_path: Path) -> Iterator[tuple[FakeHub, dict[str, str]]]:
    """A loopback hub and the environment that points the CLI at it, logged in."""
    hub = FakeHub()
    with running_server(hub.app()) as url:
        yield hub, {"HF_ENDPOINT": url, "HF_TOKEN": TOKEN, "HF_HOME": str(tmp_path / "hf-home")}
