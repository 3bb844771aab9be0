"""A non-editable install (built wheel, fresh venv) serves /web with every asset."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import time
import venv
from pathlib import Path

import httpx
import pytest

from tests._require import require
from tests.server_utils import stop_process

ROOT = Path(__file__).resolve().parents[2]

SERVE = """
import sys, uvicorn, openenv, webui
from webui import assets
print("PATHS", openenv.__file__, webui.__file__, assets.templates_dir(), assets.static_dir(), flush=True)
from openenv.core.env_server import create_app
from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation
app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo-wheel")
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding only the built wheel; dependencies come from this venv via a .pth line."""
    try:
        import hatchling  # noqa: F401
    except ImportError:
        require(False, "hatchling (test extra) to build the wheel offline")
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp / "dist"),
         str(ROOT)],
        check=True, timeout=300, capture_output=True,
    )
    wheel = next((tmp / "dist").glob("openenv-*.whl"))
    target = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        check=True, timeout=300, capture_output=True,
    )
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "zz_project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return target


def test_installed_wheel_serves_the_page_and_assets(wheel_env: Path, tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.Popen(
        [str(wheel_env / "bin" / "python"), "-I", "-c", SERVE, str(port)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("PATHS"), proc.stderr.read() if proc.poll() is not None else line
        paths = line.split()[1:]
        assert all(p.startswith(str(wheel_env)) for p in paths), paths
        assert paths[2].endswith("webui/templates") and paths[3].endswith("webui/static")
        base = f"http://127.0.0.1:{port}"
        page = None
        deadline = time.monotonic() + 60
        while page is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                page = httpx.get(f"{base}/web", timeout=5)
            except httpx.TransportError:
                time.sleep(0.1)
        assert page is not None and page.status_code == 200, proc.stderr.read() if proc.poll() is not None else page
        assert "echo-wheel" in page.text
        urls = re.findall(r'(?:href|src)="(/web/static/[^"]+)"', page.text)
        assert len(urls) == 3
        for url in urls:
            resp = httpx.get(base + url, timeout=5)
            local = ROOT / "static" / url.split("/web/static/", 1)[1].split("?", 1)[0]
            assert resp.status_code == 200 and resp.content == local.read_bytes()
    finally:
        stop_process(proc, timeout_s=15)
