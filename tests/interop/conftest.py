"""The published openenv-core as a peer, in its own venv and its own processes."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._require import require
from tests.server_utils import free_port, stop_process, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
PEERS = Path(__file__).parent / "peers"


@pytest.fixture(scope="session")
def peer_python() -> str:
    """Path of the peer venv's python (installed by scripts/peer-openenv-core)."""
    python = ROOT / ".cache" / "peer-openenv-core" / "bin" / "python"
    if not python.exists() and os.environ.get("OPENENV_REQUIRE_ALL"):
        subprocess.run([str(ROOT / "scripts" / "peer-openenv-core")], check=True, timeout=600)
    require(python.exists(), "published openenv-core peer venv (scripts/peer-openenv-core)")
    return str(python)


def run_peer(peer_python: str, script: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run a peer script with the published package (cwd outside this repo, -P: no repo on sys.path)."""
    return subprocess.run(
        [peer_python, "-P", str(PEERS / script), *args],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=timeout,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )


@contextlib.contextmanager
def serving_published_echo(peer_python: str, max_sessions: int) -> Iterator[str]:
    """An echo env served by the published package in its own process."""
    port = free_port()
    proc = subprocess.Popen(
        [peer_python, "-P", str(PEERS / "published_echo_server.py"), str(port), str(max_sessions)],
        cwd="/",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},  # the published package, not ours
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, timeout_s=60)
        yield url
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def published_server(peer_python: str) -> Iterator[str]:
    """An echo env served by the published package (cap 2 sessions: the capacity tests use it)."""
    with serving_published_echo(peer_python, 2) as url:
        yield url


@pytest.fixture(scope="module")
def roomy_published_server(peer_python: str) -> Iterator[str]:
    """The same with room for 16 sessions, for tests that open many (validate)."""
    with serving_published_echo(peer_python, 16) as url:
        yield url
