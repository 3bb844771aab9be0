"""Servers for the client tests: ours and the published 0.10, each serving an echo env."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.peer010 import ROOT, SERVE, peer010_python, serving_published
from tests.server_utils import free_port, wait_healthy

HERE = Path(__file__).parent
ECHO010 = HERE / "echo010.py"
OUR_ECHO = ROOT / "openenv" / "envs" / "echo" / "app.py"


@pytest.fixture(scope="session")
def published_url() -> Iterator[str]:
    """The 0.10-style echo env served by the published 0.10 in its venv."""
    with serving_published(ECHO010) as url:
        yield url


@pytest.fixture(params=["ours", "published"])
def any_url(request: pytest.FixtureRequest, echo_url: str) -> str:
    """An echo server: ours (in-thread) or the published 0.10's (its own process)."""
    return echo_url if request.param == "ours" else request.getfixturevalue("published_url")


class RestartableServer:
    """An echo server in a subprocess on a fixed free port: ``kill()`` it and ``start()`` it again."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        if self.kind == "ours":
            cmd = [sys.executable, str(SERVE), str(OUR_ECHO), "app", str(self.port)]
            env, cwd = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, str(ROOT)
        else:
            cmd = [peer010_python(), "-P", str(SERVE), str(ECHO010), "app", str(self.port)]
            env, cwd = {"PATH": "/usr/bin:/bin"}, "/"
        deadline = time.monotonic() + 30
        while True:  # the port may take a moment to be free again after a kill
            self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_healthy(self.url, timeout_s=60)
                return
            except TimeoutError:
                self.kill()
                if time.monotonic() > deadline:
                    raise

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None


@contextlib.contextmanager
def restartable(kind: str) -> Iterator[RestartableServer]:
    server = RestartableServer(kind)
    server.start()
    try:
        yield server
    finally:
        server.kill()
