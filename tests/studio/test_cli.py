"""`openenv studio` as a user runs it: a subprocess on a fresh data dir serving its pages."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.server_utils import free_port, wait_healthy


def test_openenv_studio_serves_on_a_fresh_data_dir(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "fresh" / "studio-data"
    env = {**os.environ, "OPENENV_STUDIO_DOCKER": "false", "XDG_DATA_HOME": str(tmp_path / "xdg")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv.cli.main", "studio", "--port", str(port), "--data-dir", str(data)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, timeout_s=60)
        with httpx.Client(base_url=url, trust_env=False) as http:
            for path in ("/envs", "/episodes", "/static/studio.css", "/static/vendor/htmx-2.0.11.min.js"):
                assert http.get(path).status_code == 200, path
        assert (data / "episodes.db").is_file()
        assert not (tmp_path / "xdg").exists()  # --data-dir wins over the per-user default
    finally:
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=30)[0].decode()
    assert f"http://127.0.0.1:{port}/" in output and "Traceback" not in output
