"""Shared bits of the importer tests: the sources, the CLI in a subprocess, a served target."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests._require import require
from tests.server_utils import free_port, stop_process, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
SOURCES = Path(__file__).with_name("sources")


def need(module: str) -> None:
    import importlib.util

    require(importlib.util.find_spec(module) is not None, f"{module} (pip install 'openenv[{'ors' if module == 'openreward' else module}]')")


def cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "openenv", *args], capture_output=True, text=True,
                          cwd=str(cwd or ROOT), env=env, timeout=timeout)  # fmt: skip


@contextlib.contextmanager
def serving(target: str, python: str = sys.executable, ours: bool = True, pythonpath: str | None = None) -> Iterator[str]:
    """``openenv serve TARGET`` (ours) in a subprocess on a free loopback port; yields its URL."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    if ours:
        env["PYTHONPATH"] = str(ROOT)
        cmd = [python, "-m", "openenv", "serve", target, "--port", str(port)]
    else:  # the published 0.10: uvicorn on the package's server.app, from inside the package
        cmd = [python, "-P", "-m", "uvicorn", "server.app:app", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=str(ROOT) if ours else target, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(url, timeout_s=120)
        except TimeoutError:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise RuntimeError(f"{target} did not serve: {err.decode(errors='replace')[-3000:]}") from None
        yield url
    finally:
        stop_process(proc)
