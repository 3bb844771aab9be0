"""``UVProvider``: run an environment package with ``uv run`` (0.10's provider of that name).

    with UVProvider(project_path="envs/echo_env") as provider:   # uv run --isolated --project ...
        client = GenericEnvClient(base_url=provider.base_url)

``uv run --isolated --project PATH -- uvicorn APP --host H --port P --workers N`` builds a
throwaway venv from the project's ``pyproject.toml`` and serves ``APP`` (default
``server.app:app``, imported from the project directory, which is the server's working
directory). A ``git+<url>`` project is cloned first. ``uv`` comes from ``PATH`` or the
PyPI ``uv`` package (``pip install uv``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any

import httpx

from .errors import EngineUnavailableError, StartupError, StartupTimeoutError
from .runtime_provider import RuntimeProvider

__all__ = ["UVProvider", "find_uv"]

GIT_URL_PREFIX = "git+"


def find_uv() -> str:
    """The ``uv`` executable: on ``PATH``, else the one the PyPI ``uv`` package ships."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        from uv import find_uv_bin  # the PyPI package (the [uv] extra)

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        raise EngineUnavailableError(
            "`uv` executable not found: install uv (https://docs.astral.sh/uv) or "
            "`pip install uv`"
        ) from None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def _clone(git_url: str, timeout_s: float) -> str:
    target = tempfile.mkdtemp(prefix="openenv-uv-clone-")
    try:
        subprocess.run(["git", "clone", "--depth", "1", git_url[len(GIT_URL_PREFIX):], target],
                       check=True, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(target, ignore_errors=True)
        detail = getattr(exc, "stderr", None) or exc
        raise StartupError(f"could not clone {git_url!r}: {str(detail).strip()[:300]}") from None
    return target


class UVProvider(RuntimeProvider):
    """Runs an environment package with ``uv run`` in its own isolated venv.

    Args:
        project_path: a local uv project directory, or ``git+<url>`` (cloned on ``start``).
        app: the ASGI app for uvicorn (``module:attr``).
        host: interface to bind (clients connect to 127.0.0.1 when it is 0.0.0.0/::).
        reload: uvicorn's ``--reload``.
        env_vars: environment variables for the server process.
        context_timeout_s: default bound for ``wait_for_ready``.
    """

    def __init__(self, *, project_path: str, app: str = "server.app:app", host: str = "0.0.0.0",
                 reload: bool = False, env_vars: dict[str, str] | None = None,
                 context_timeout_s: float = 60.0) -> None:
        git = project_path.startswith(GIT_URL_PREFIX)
        self.project_path = project_path if git else os.path.abspath(project_path)
        self.app, self.host, self.reload = app, host, reload
        self.env_vars = env_vars
        self.context_timeout_s = context_timeout_s
        self.uv = find_uv()  # fail at construction, as 0.10 does, when uv is missing
        self._process: subprocess.Popen | None = None
        self._base_url: str | None = None
        self._clone_dir: str | None = None

    def command(self, port: int, workers: int = 1, project_path: str | None = None) -> list[str]:
        """The ``uv run`` command line that serves the app on ``port``."""
        cmd = [self.uv, "run", "--isolated", "--project", project_path or self.project_path, "--",
               "uvicorn", self.app, "--host", self.host, "--port", str(port), "--workers", str(workers)]
        return cmd + (["--reload"] if self.reload else [])

    def start(self, port: int | None = None, env_vars: dict[str, str] | None = None, workers: int = 1,
              **_: Any) -> str:
        """Launch the server; returns its base URL (call ``wait_for_ready`` before using it)."""
        if self._process is not None and self._process.poll() is None:
            raise RuntimeError("UVProvider is already running")
        self._drop_clone()
        project = self.project_path
        if project.startswith(GIT_URL_PREFIX):
            project = self._clone_dir = _clone(project, self.context_timeout_s)
        port = port or _free_port()
        env = {**os.environ, **(self.env_vars or {}), **(env_vars or {})}
        env.pop("VIRTUAL_ENV", None)  # uv would warn that the caller's venv is not the project's
        try:
            # cwd is the project, so ``server.app:app`` imports from it wherever the caller runs
            self._process = subprocess.Popen(self.command(port, workers, project), env=env, cwd=project)
        except OSError as exc:
            self._drop_clone()
            raise StartupError(f"could not launch `uv run`: {exc}") from None
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        self._base_url = f"http://{host}:{port}"
        return self._base_url

    def wait_for_ready(self, timeout_s: float | None = None) -> None:
        """Poll ``/health`` until 200; raises ``StartupError`` if ``uv run`` exits first and
        ``StartupTimeoutError`` (a ``TimeoutError``) after ``timeout_s``."""
        if self._base_url is None:
            raise RuntimeError("UVProvider has not been started")
        timeout_s = self.context_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=2.0, trust_env=False) as http:
            while True:
                if self._process is not None and self._process.poll() is not None:
                    raise StartupError(f"uv process exited prematurely with code {self._process.returncode}")
                try:
                    if http.get(self._base_url + "/health").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() >= deadline:
                    raise StartupTimeoutError(f"Server did not become ready within {timeout_s:.1f} seconds")
                time.sleep(0.2)

    def stop(self) -> None:
        """Terminate the server (kill it after 10 s) and remove a cloned project."""
        proc, self._process = self._process, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5.0)
        self._base_url = None
        self._drop_clone()

    def _drop_clone(self) -> None:
        if self._clone_dir is not None:
            shutil.rmtree(self._clone_dir, ignore_errors=True)
            self._clone_dir = None

    @property
    def base_url(self) -> str:
        """The running server's URL; raises ``RuntimeError`` before ``start``."""
        if self._base_url is None:
            raise RuntimeError("UVProvider has not been started")
        return self._base_url
