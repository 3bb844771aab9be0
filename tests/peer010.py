"""The published ``openenv`` 0.10 as a peer: its own venv (scripts/peer-openenv-010), its own processes.

Differential tests serve the same environment module with ours (``serving_ours``) and with the
published 0.10 (``serving_published``), and run client scripts in either interpreter
(``run_with``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests._require import require
from tests.server_utils import free_port, stop_process, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
PEERS010 = Path(__file__).parent / "peers010"
SERVE = PEERS010 / "serve_file.py"


def peer010_python() -> str:
    """Path of the 0.10 peer venv's python; installs it under OPENENV_REQUIRE_ALL."""
    venv = Path(os.environ.get("OPENENV_PEER010_VENV", ROOT / ".cache" / "peer-openenv-0.10"))
    python = venv / "bin" / "python"
    if not (venv / ".ok-0.10.0").exists() and os.environ.get("OPENENV_REQUIRE_ALL"):
        subprocess.run([str(ROOT / "scripts" / "peer-openenv-010")], check=True, timeout=1200)
    require((venv / ".ok-0.10.0").exists(), "published openenv 0.10 peer venv (scripts/peer-openenv-010)")
    return str(python)


def _clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(extra or {})
    return env


@contextlib.contextmanager
def _serving(python: str, module_file: Path, attr: str, *, ours: bool, extra_env: dict[str, str] | None) -> Iterator[str]:
    port = free_port()
    env = _clean_env({"PYTHONPATH": str(ROOT)} if ours else None)
    env.update(extra_env or {})
    proc = subprocess.Popen(
        [python, *([] if ours else ["-P"]), str(SERVE), str(module_file), attr, str(port)],
        cwd=str(ROOT) if ours else "/",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(url, timeout_s=90)
        except TimeoutError:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise RuntimeError(f"{module_file.name} did not serve: {err.decode(errors='replace')[-3000:]}") from None
        yield url
    finally:
        stop_process(proc)


def serving_published(module_file: Path, attr: str = "app", extra_env: dict[str, str] | None = None):
    """Serve ``module_file:attr`` with the published 0.10 in its venv; yields the base URL."""
    return _serving(peer010_python(), module_file, attr, ours=False, extra_env=extra_env)


def serving_ours(module_file: Path, attr: str = "app", extra_env: dict[str, str] | None = None):
    """Serve ``module_file:attr`` with this repo's package in a subprocess; yields the base URL."""
    return _serving(sys.executable, module_file, attr, ours=True, extra_env=extra_env)


def run_with(python: str, script: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``script`` under ``python`` (the peer's: -P and cwd '/', so only its package is seen)."""
    ours = python == sys.executable
    return subprocess.run(
        [python, *([] if ours else ["-P"]), str(script), *args],
        cwd=str(ROOT) if ours else "/",
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_clean_env({"PYTHONPATH": str(ROOT)} if ours else None),
    )
