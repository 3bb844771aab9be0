"""``openenv serve`` with 0.10's spelling: no target (the current directory), ``-p``, and
``--reload`` (the app is rebuilt when a file of the env changes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx

from tests.authoring.conftest import OPENENV
from tests.server_utils import free_port, stop_process, wait_healthy

ROOT = Path(__file__).resolve().parents[2]


def test_serve_reload_from_the_env_directory_picks_up_an_edit(scaffold: Path, tmp_path: Path):
    env_dir = tmp_path / "guess_number"
    shutil.copytree(scaffold, env_dir, ignore=shutil.ignore_patterns("__pycache__"))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([*OPENENV, "serve", "-p", str(port), "--reload"], cwd=env_dir, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, timeout_s=60)
        assert "seven guesses" in httpx.get(f"{url}/metadata", timeout=10).json()["description"]
        source = env_dir / "server" / "guess_number_environment.py"
        source.write_text(source.read_text().replace('description="Find a hidden number',
                                                     'description="Edited: find a hidden number'))
        deadline, seen = time.monotonic() + 60, ""
        while time.monotonic() < deadline and not seen.startswith("Edited"):
            time.sleep(0.5)
            try:
                seen = httpx.get(f"{url}/metadata", timeout=5).json()["description"]
            except (httpx.HTTPError, ValueError):
                continue  # the server is restarting
        assert seen.startswith("Edited"), seen
    finally:
        stop_process(proc, timeout_s=20)
