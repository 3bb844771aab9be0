"""Local process provider, the embedded default: the env server as a supervised subprocess.

The server listens on 127.0.0.1, runs in its own process group under ``_supervisor.py`` (which
takes the group down if this process dies), logs to a file in the data dir, and is recorded there
so ``list_runtimes``/``attach`` find it again after a restart.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from openenv.core._children import child_ended, wait_child

from .base import ContainerProvider, RuntimeInfo, RuntimeStatus
from .errors import ProviderError, RuntimeNotFoundError, StartupError
from .ports import HOST, ensure_port_free, free_port
from .records import RecordStore, default_data_dir, process_start_ticks, tail_lines

__all__ = ["LocalProcessProvider", "server_command"]

_SUPERVISOR = Path(__file__).with_name("_supervisor.py")
_MODULE_APP = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_STOP_GRACE_S = 8.0


def server_command(target: str, port: int, python: str | None = None) -> list[str]:
    """The command serving ``target`` (bundled env name, ``module:app`` or env directory)."""
    python = python or sys.executable
    if _MODULE_APP.match(target) and not Path(target).exists():
        return [python, "-m", "uvicorn", target, "--host", HOST, "--port", str(port)]
    serve = "from openenv.cli.serve import serve; serve()"  # `openenv serve`, minus the other commands
    return [python, "-c", serve, target, "--host", HOST, "--port", str(port)]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _spawn_detached(cmd: list[str], env: dict[str, str], log_fd: int) -> int:
    """Start ``cmd`` in its own session, stdin from /dev/null, output to ``log_fd``; its pid."""
    return os.posix_spawnp(
        cmd[0],
        cmd,
        env,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, log_fd, 1),
            (os.POSIX_SPAWN_DUP2, log_fd, 2),
        ],
        setsid=True,
    )


class LocalProcessProvider(ContainerProvider):
    """Runs an env server as a local subprocess (no Docker needed).

    Args:
        project: scopes listing and cleanup (default ``$OPENENV_PROJECT`` or ``"default"``).
        data_dir: where process records and logs live (default ``$OPENENV_DATA_DIR``).
        python: interpreter for the server (default: this one).
    """

    kind = "process"

    def __init__(
        self, *, project: str | None = None, data_dir: str | Path | None = None, python: str | None = None
    ) -> None:
        super().__init__(project=project)
        self.store = RecordStore(Path(data_dir) if data_dir else default_data_dir() / "runtimes")
        self.python = python or sys.executable
        self._proc: subprocess.Popen[bytes] | None = None
        self._child: int | None = None  # a detached child of ours (no Popen: it may outlive us), to reap
        self._record: dict[str, Any] | None = None
        self._watch_fd: int | None = None
        self._stopped = False
        self._ready = False

    def start_container(
        self,
        image: str,
        port: int | None = None,
        env_vars: dict[str, str] | None = None,
        *,
        cwd: str | Path | None = None,
        detach: bool = False,
        **kwargs: Any,
    ) -> str:
        """Start serving ``image`` (an env name, ``module:app`` or env directory); return its URL.

        ``detach=True`` lets the server outlive this process (find it again with ``attach``).
        """
        if kwargs:
            raise ProviderError(f"the process provider does not support: {', '.join(sorted(kwargs))}")
        if self.runtime_id is not None:
            raise ProviderError(f"this provider already started {self.runtime_id}; stop it first")
        port = ensure_port_free(port) if port is not None else free_port()
        runtime_id = f"proc-{uuid.uuid4().hex[:12]}"
        self.store.root.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env_vars or {})}
        read_fd, write_fd = (-1, None) if detach else os.pipe()
        where = ["--cwd", str(cwd)] if detach and cwd is not None else []
        cmd = [self.python, str(_SUPERVISOR), str(read_fd), *where, "--", *server_command(image, port, self.python)]
        try:
            with self.store.log_path(runtime_id).open("wb") as log:
                if detach:  # no Popen object: it would warn when collected while the env lives on
                    self._child = _spawn_detached(cmd, env, log.fileno())
                else:
                    self._proc = subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                        cwd=cwd,
                        start_new_session=True,
                        pass_fds=(read_fd,),
                    )
        except OSError as exc:
            if write_fd is not None:
                os.close(write_fd)
            raise ProviderError(f"could not start the env process: {exc}") from exc
        finally:
            if read_fd >= 0:
                os.close(read_fd)
        self._watch_fd = write_fd
        self.runtime_id = runtime_id
        self.base_url = f"http://{HOST}:{port}"
        pid = self._proc.pid if self._proc is not None else self._child
        self._record = {
            "runtime_id": runtime_id,
            "project": self.project,
            "env_name": image,
            "base_url": self.base_url,
            "pid": pid,
            "start_ticks": process_start_ticks(pid),
            "started_at": time.time(),
            "detached": detach,
        }
        self.store.write(runtime_id, self._record)
        return self.base_url

    def _alive(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        if self._child is not None:
            return not self._reap_child()
        if self._record is None:
            return False
        ticks = process_start_ticks(self._record["pid"])
        return ticks is not None and ticks == self._record.get("start_ticks")

    def _check_alive(self) -> None:
        if self._alive():
            return
        code = self._proc.returncode if self._proc is not None else None
        raise StartupError(
            f"environment process exited with code {code} while starting",
            log_tail=self.logs(50),
            exit_code=code,
        )

    def wait_for_ready(self, base_url: str | None = None, timeout_s: float = 30.0) -> None:
        super().wait_for_ready(base_url, timeout_s)
        self._ready = True

    def status(self) -> RuntimeStatus:
        if self._stopped:
            return RuntimeStatus.STOPPED
        if self.runtime_id is None:
            raise ProviderError("nothing started yet")
        if not self._alive():
            return RuntimeStatus.EXITED
        return RuntimeStatus.RUNNING if self._ready else RuntimeStatus.STARTING

    def logs(self, tail: int = 100) -> str:
        if self.runtime_id is None:
            return ""
        return tail_lines(self.store.log_path(self.runtime_id), tail)

    def stop_container(self) -> None:
        """Stop the whole process group (SIGTERM, then SIGKILL) and forget the record."""
        if self._stopped or self.runtime_id is None:
            return
        if self._record is not None and self._owns_group():
            self._end_group(self._record["pid"])
        if self._watch_fd is not None:
            os.close(self._watch_fd)
            self._watch_fd = None
        self.store.remove(self.runtime_id)
        self._stopped = True

    def _owns_group(self) -> bool:
        """Whether the process group named by the record is still ours to end."""
        if self._proc is not None:
            return True
        pid = self._record["pid"]
        ticks = process_start_ticks(pid)
        if ticks is not None:
            return ticks == self._record.get("start_ticks")
        return _group_alive(pid)  # leader gone: a pgid is not reused while members remain

    def _end_group(self, pgid: int) -> None:
        """SIGTERM the group; its leader, the supervisor, exits once the server has (within its
        grace period). Then SIGKILL whatever is left in the group."""
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        if self._proc is not None:
            try:
                self._proc.wait(timeout=_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        else:
            deadline = time.monotonic() + _STOP_GRACE_S
            while time.monotonic() < deadline:
                gone = self._reap_child() if self._child is not None else process_start_ticks(pgid) is None
                if gone:
                    break
                time.sleep(0.05)
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self._proc is not None:
            self._proc.wait(timeout=_STOP_GRACE_S)
        elif self._child is not None and wait_child(self._child, _STOP_GRACE_S):
            self._child = None

    def _reap_child(self) -> bool:
        """Whether the detached child has ended (reaping it, so it leaves no zombie)."""
        if self._child is not None and child_ended(self._child):
            self._child = None
        return self._child is None

    @classmethod
    def list_runtimes(
        cls, *, project: str | None = None, data_dir: str | Path | None = None, **kwargs: Any
    ) -> list[RuntimeInfo]:
        probe = cls(project=project, data_dir=data_dir)
        found = []
        for record in probe.store.all():
            if record.get("project") != probe.project:
                continue
            ticks = process_start_ticks(record["pid"])
            alive = ticks is not None and ticks == record.get("start_ticks")
            found.append(
                RuntimeInfo(
                    runtime_id=record["runtime_id"],
                    provider=cls.kind,
                    project=record["project"],
                    env_name=record.get("env_name"),
                    base_url=record.get("base_url"),
                    status=RuntimeStatus.RUNNING if alive else RuntimeStatus.EXITED,
                    started_at=record.get("started_at"),
                    extra={"pid": record["pid"]},
                )
            )
        return found

    @classmethod
    def attach(
        cls, runtime_id: str, *, data_dir: str | Path | None = None, **kwargs: Any
    ) -> LocalProcessProvider:
        store = RecordStore(Path(data_dir) if data_dir else default_data_dir() / "runtimes")
        record = store.read(runtime_id)
        if record is None:
            raise RuntimeNotFoundError(f"no env process {runtime_id!r} is recorded", runtime_id=runtime_id)
        provider = cls(project=record.get("project"), data_dir=store.root)
        provider.runtime_id = runtime_id
        provider.base_url = record.get("base_url")
        provider._record = record
        provider._ready = True
        return provider
