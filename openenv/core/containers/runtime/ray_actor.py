"""The Ray actor that hosts one environment server on the node it was placed on.

The server is a child of the actor, run under ``_supervisor.py`` with a pipe the actor holds open:
when the actor dies (stopped, killed, its node or driver gone), the pipe closes and the supervisor
takes the server's whole process group down. A Docker-image target runs as a container on the
node's engine, with a guard process under the same supervisor that removes the container then.

Methods answer plain dicts (never raise across Ray), so the driver turns them into its own errors.
Imported only by ``ray.py``, on the driver and on the nodes (which need ``openenv`` installed).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ray

from .records import tail_lines

__all__ = ["EnvServerActor", "resolve_runtime", "serve_command"]

_SUPERVISOR = Path(__file__).with_name("_supervisor.py")
_MODULE_APP = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_SERVE = "from openenv.cli.serve import serve; serve()"  # `openenv serve`, without the other commands
# Runs the server (or guard) so that it gets SIGTERM when its parent, the supervisor, dies: Ray
# SIGKILLs an ended actor's child processes, so the supervisor may not live to end the group.
_TIED = """
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG, kept across exec
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)  # the supervisor is already gone
os.execvp(sys.argv[2], sys.argv[2:])
"""
# Removes the container when the supervisor ends this guard (SIGTERM), i.e. when the actor is gone.
_GUARD = """
import signal, sys, docker
signal.signal(signal.SIGTERM, lambda *_: None)
signal.pause()
c = docker.from_env(timeout=10).containers.get(sys.argv[1])
c.remove(force=True)
"""


def resolve_runtime(target: str, runtime: str = "auto") -> str:
    """``process`` for a bundled env, env directory or importable ``module:app``; else ``docker``."""
    if runtime in ("process", "docker"):
        return runtime
    if runtime != "auto":
        raise ValueError(f"runtime must be auto, process or docker, not {runtime!r}")
    if Path(target).is_dir():
        return "process"
    if _MODULE_APP.match(target):
        module = target.partition(":")[0]
        try:
            if importlib.util.find_spec(module) is not None:
                return "process"
        except (ImportError, ValueError):
            pass
    from openenv.auto.resolve import bundled_envs

    if target in bundled_envs():
        return "process"
    return "docker" if ("/" in target or ":" in target or "-" in target) else "process"


def serve_command(target: str, host: str, port: int, python: str | None = None) -> list[str]:
    """``openenv serve TARGET`` on ``host:port`` (a bundled env, ``module:app`` or env directory)."""
    return [python or sys.executable, "-c", _SERVE, target, "--host", host, "--port", str(port)]


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _node_logs_dir() -> str | None:
    """The Ray node's log directory (removed with the node's session), else the system temp dir."""
    node = getattr(ray._private.worker, "_global_node", None)  # no public API names it
    try:
        return node.get_logs_dir_path() if node is not None else None
    except (AttributeError, OSError):
        return None


class EnvServerActor:
    """One env server on this node. ``spec`` holds target, runtime, host, port, env_vars, token, labels.

    The server requires ``spec["token"]`` when it was given, and also when the driver minted one
    (``spec["token_minted"]``) and the server binds an address other than loopback: a server that
    other machines can reach never runs without a token. The token stays out of ``info()`` (which is
    listed and logged); the driver that needs it asks ``credentials()``.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        ctx = ray.get_runtime_context()
        self.node_id = ctx.get_node_id()
        self.node_ip = ray.util.get_node_ip_address()
        self.host = spec.get("host") or self.node_ip
        self.log_dir = Path(tempfile.mkdtemp(prefix="openenv-env-", dir=_node_logs_dir()))
        self.log_path = self.log_dir / "server.log"
        self.base_url: str | None = None
        self.runtime = ""
        self.started_at = time.time()
        self._proc: subprocess.Popen[bytes] | None = None
        self._watch_fd: int | None = None
        self._container: Any = None
        self._exit_code: int | None = None
        token = spec.get("token")
        self._token: str | None = token if token and (not spec.get("token_minted") or not _is_loopback(self.host)) else None

    def start(self) -> dict[str, Any]:
        """Start the server (not waiting for health); its info, or ``{"error": ...}``."""
        spec = self.spec
        try:
            self.runtime = resolve_runtime(spec["target"], spec.get("runtime") or "auto")
            port = spec.get("port") or _free_port(self.host)
            if self.runtime == "docker":
                self._start_container(port)
            else:
                env = {**os.environ, "PYTHONUNBUFFERED": "1", **(spec.get("env_vars") or {})}
                env.pop("OPENENV_TOKEN", None)  # the node's own token is not this server's
                if self._token:
                    env["OPENENV_TOKEN"] = self._token
                self._supervise(serve_command(spec["target"], self.host, port), env)
        except Exception as exc:  # the actor boundary: report, never raise through Ray
            self.stop()
            return {"error": f"{type(exc).__name__}: {exc}", "log_tail": self.logs(50)}
        self.base_url = f"http://{self.host}:{port}"
        return self.info()

    def _supervise(self, cmd: list[str], env: dict[str, str]) -> None:
        read_fd, write_fd = os.pipe()
        try:
            with self.log_path.open("ab") as log:
                self._proc = subprocess.Popen(
                    [sys.executable, str(_SUPERVISOR), str(read_fd), "--", *self._tied(cmd)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                    start_new_session=True, pass_fds=(read_fd,), cwd=self.spec.get("cwd") or None,
                )
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        self._watch_fd = write_fd

    @staticmethod
    def _tied(cmd: list[str]) -> list[str]:
        """``cmd`` behind the death-signal shim (the supervisor's pid is known once it runs: ``$PPID``)."""
        return ["/bin/sh", "-c", 's=$1; shift; exec "$0" -c "$s" "$PPID" "$@"', sys.executable, _TIED, *cmd]

    def _start_container(self, port: int) -> None:
        from .docker import LocalDockerProvider

        if self.host not in ("127.0.0.1", "localhost"):
            raise ValueError("a Docker-image env publishes on the node's loopback only; this node is "
                             f"{self.host}: serve a bundled env, module:app or directory instead")
        spec = self.spec
        docker_provider = LocalDockerProvider(project=f"ray-{spec['project']}")
        opts = {k: spec[k] for k in ("container_port",) if spec.get(k)}
        docker_provider.start_container(spec["target"], port=port, env_vars=spec.get("env_vars"),
                                        env_name=spec.get("env_name") or spec["target"], **opts)
        self._container = docker_provider
        self._supervise([sys.executable, "-c", _GUARD, docker_provider.runtime_id], dict(os.environ))

    def poll(self) -> int | None:
        """The server's exit code, or None while it runs."""
        if self._exit_code is not None:
            return self._exit_code
        if self._proc is not None and self._proc.poll() is not None:
            self._exit_code = self._proc.returncode
        elif self._container is not None:
            from .base import RuntimeStatus

            if self._container.status() is RuntimeStatus.EXITED:
                self._exit_code = -1
        return self._exit_code

    def logs(self, tail: int = 100) -> str:
        if self._container is not None:
            return self._container.safe_logs(tail)
        return tail_lines(self.log_path, tail)

    def info(self) -> dict[str, Any]:
        return {
            "runtime_id": self.spec.get("runtime_id"),
            "project": self.spec.get("project"),
            "env_name": self.spec.get("env_name") or self.spec.get("target"),
            "target": self.spec.get("target"),
            "runtime": self.runtime,
            "base_url": self.base_url,
            "node_id": self.node_id,
            "node_ip": self.node_ip,
            "pid": os.getpid(),
            "detached": bool(self.spec.get("detached")),
            "started_at": self.started_at,
            "exit_code": self.poll(),
            "auth": self._token is not None,
        }

    def credentials(self) -> str | None:
        """The bearer token the server requires, or None (for the driver; never part of ``info``)."""
        return self._token

    def stop(self) -> None:
        """End the server (the supervisor's grace, then SIGKILL) and remove its container."""
        if self._container is not None:
            self._container.stop_quietly()
        if self._watch_fd is not None:
            os.close(self._watch_fd)  # end of file: the supervisor ends the server's group
            self._watch_fd = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)
            self._exit_code = self._proc.returncode if self._exit_code is None else self._exit_code
        shutil.rmtree(self.log_dir, ignore_errors=True)


RemoteEnvServer = ray.remote(max_restarts=0, max_concurrency=4)(EnvServerActor)
