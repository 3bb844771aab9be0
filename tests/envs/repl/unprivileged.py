"""Run a real REPL server as an ordinary (non-root) uid, the way a normal user runs `openenv serve repl`.

The server runs under the system interpreter from a world-readable venv (``scripts/repl-sysvenv``,
cached under ``.cache/``) with a world-readable copy of the ``openenv`` package on ``PYTHONPATH``,
as a uid of its own, dropped to by ``setpriv`` from the (root) test process. Also used by
``bench/repl_cells.py --unprivileged``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SERVER_UID_BASE = 450000  # below the workers' uid pool (420000 + 4096 .. ) and clear of it
SETPRIV = shutil.which("setpriv", path="/usr/bin:/bin")


def _world_traversable(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents] if p.exists())


def sysvenv_dir() -> Path:
    """Where the system-interpreter venv lives: ``.cache/`` of the repo if other uids can reach it."""
    cache = REPO / ".cache"
    if _world_traversable(REPO):
        return cache / "repl-sysvenv"
    return Path(tempfile.gettempdir()) / "openenv-repl-sysvenv"


def ensure_sysvenv() -> str | None:
    """Build (once) the venv; returns its python, or None when it cannot be built here."""
    if not os.access("/usr/bin/python3", os.X_OK):
        return None
    dest = sysvenv_dir()
    out = subprocess.run([str(REPO / "scripts" / "repl-sysvenv"), str(dest)], capture_output=True, text=True,
                         timeout=600, check=False)
    python = dest / "bin" / "python"
    return str(python) if out.returncode == 0 and python.exists() else None


def can_run_unprivileged() -> bool:
    """Root (to drop to a test uid), setpriv, and a buildable system-interpreter venv."""
    return os.geteuid() == 0 and SETPRIV is not None and ensure_sysvenv() is not None


def server_uid(offset: int = 0) -> int:
    """A uid for this test process's unprivileged servers (unique per pytest process)."""
    return SERVER_UID_BASE + (os.getpid() % 4000) * 2 + offset


def pids_of(uid: int) -> list[int]:
    """Host pids of every process running as ``uid``."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def kill_uid(uid: int) -> None:
    """SIGKILL every process of ``uid`` (only ever a test uid this process owns)."""
    for pid in pids_of(uid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class Served:
    """An unprivileged server: its base URL, process and uid."""

    url: str
    proc: subprocess.Popen[bytes]
    uid: int


def _package_copy() -> str:
    """A world-readable copy of the ``openenv`` package, for the unprivileged uid to import."""
    root = tempfile.mkdtemp(prefix="openenv-repl-pkg-")
    os.chmod(root, 0o755)
    shutil.copytree(REPO / "openenv", Path(root) / "openenv", ignore=shutil.ignore_patterns("__pycache__"))
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    return root


def unprivileged_command(uid: int, *argv: str) -> list[str]:
    """``argv`` run by the system-interpreter venv's python as ``uid`` (no groups, no new privileges)."""
    python = ensure_sysvenv()
    assert python is not None and SETPRIV is not None
    return [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs", "--", python, *argv]


def unprivileged_env(pkg: str, home: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A plain user's environment for the server (no OPENENV_* of the test process leaks in)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "PYTHONPATH": pkg,
           "PYTHONDONTWRITEBYTECODE": "1", "OPENENV_WEB": "0"}
    env.update(extra or {})
    return env


@contextlib.contextmanager
def unprivileged_home(uid: int) -> Iterator[tuple[str, str]]:
    """(package copy, home directory owned by ``uid``); both removed afterwards."""
    pkg = _package_copy()
    home = tempfile.mkdtemp(prefix="openenv-repl-home-")
    os.chown(home, uid, uid)
    try:
        yield pkg, home
    finally:
        shutil.rmtree(pkg, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def unprivileged_server(extra_env: dict[str, str] | None = None, *, uid: int | None = None,
                        timeout_s: float = 60.0) -> Iterator[Served]:
    """Serve ``openenv.envs.repl.app:app`` as an unprivileged uid on 127.0.0.1; everything of that uid dies after."""
    from tests.server_utils import free_port, stop_process, wait_healthy

    uid = server_uid() if uid is None else uid
    port = free_port()
    with unprivileged_home(uid) as (pkg, home):
        argv = unprivileged_command(uid, "-m", "uvicorn", "openenv.envs.repl.app:app", "--host", "127.0.0.1",
                                    "--port", str(port), "--log-level", "warning", "--ws-per-message-deflate", "false")
        proc = subprocess.Popen(argv, env=unprivileged_env(pkg, home, extra_env), cwd=home,
                                stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    wait_healthy(url, timeout_s=1.0)
                    break
                except TimeoutError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                        raise RuntimeError(f"unprivileged REPL server did not start: {err[-2000:]}") from None
            yield Served(url, proc, uid)
        finally:
            stop_process(proc, timeout_s=15)
            kill_uid(uid)
