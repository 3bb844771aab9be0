"""Both ways with the published 0.10 (its own venv): an env scaffolded by ours is a 0.10 env (0.10
validates it, serves it, and its client runs under 0.10), and 0.10's scaffold serves and validates
on ours."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.authoring.conftest import OPENENV, openenv
from tests.peer010 import _clean_env, peer010_python
from tests.server_utils import free_port, stop_process, wait_healthy

DRIVE = Path(__file__).with_name("scaffold_drive.py")
ROOT = Path(__file__).resolve().parents[2]


def _peer(*args: str, cwd: str = "/", timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([peer010_python(), "-P", "-m", "openenv.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=_clean_env())


@contextlib.contextmanager
def _served(cmd: list[str], cwd: Path, *, ours: bool) -> Iterator[str]:
    env = _clean_env({"PYTHONPATH": str(ROOT)} if ours else None)
    proc = subprocess.Popen(cmd, cwd=str(cwd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    url = f"http://127.0.0.1:{cmd[cmd.index('--port') + 1]}"
    try:
        try:
            wait_healthy(url, timeout_s=90)
        except TimeoutError:
            proc.kill()
            raise RuntimeError(proc.communicate(timeout=10)[1].decode(errors="replace")[-3000:]) from None
        yield url
    finally:
        stop_process(proc)


def _drive(python: str, env_dir: Path, url: str) -> dict:
    ours = python == sys.executable
    done = subprocess.run([python, *([] if ours else ["-P"]), str(DRIVE), str(env_dir), url], capture_output=True,
                          text=True, timeout=120, cwd="/", env=_clean_env({"PYTHONPATH": str(ROOT)} if ours else None))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_010_validates_our_scaffold(scaffold: Path):
    done = _peer("validate", str(scaffold), "--skip-build", "--json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["verdict"] != "fail" and report["signature"] == "openenv.yaml"
    statuses = {r["check_id"]: r["status"] for r in report["results"]}
    assert statuses["static.manifest"] == "pass"


@pytest.mark.parametrize("server", ["0.10 uvicorn", "ours"])
def test_our_scaffold_serves_and_its_client_runs_on_both(scaffold: Path, server: str):
    port = str(free_port())
    if server == "ours":  # `openenv serve` with no target: the current directory, as 0.10 takes it
        cmd, ours = [*OPENENV, "serve", "--port", port], True
    else:  # what 0.10's image does: cd into the env and run uvicorn server.app:app
        cmd, ours = [peer010_python(), "-P", "-m", "uvicorn", "server.app:app", "--port", port], False
    with _served(cmd, scaffold, ours=ours) as url:
        for python in (sys.executable, peer010_python()):
            got = _drive(python, scaffold, url)
            assert got["left"] == 7 and got["hints"][-1] == "correct", (python, got)
            assert got["reward"] == 1.0 and got["done"] is True and got["steps"] == len(got["hints"])
            assert got["client_module"] == "guess_number.client"


def test_010s_scaffold_serves_and_validates_on_ours(tmp_path: Path):
    done = _peer("init", "echo_probe_env", "--output-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    env_dir = tmp_path / "echo_probe_env"
    checked = openenv("validate", str(env_dir))
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert "PASS  ws.reset_step_state" in checked.stdout
    static = openenv("validate", "--level", "static", "--skip-build", cwd=env_dir)
    assert static.returncode == 0 and "package.app_module" in static.stdout and "ws." not in static.stdout
