"""Starting and stopping one worker process (the sandbox decides when).

The worker's two stdlib-only modules are copied once into ``<workdirs root>/lib``
(root-owned, 0755/0644: readable by every worker uid, writable by none) and run by the
system interpreter. When available, ``unshare --net`` and ``setpriv`` (util-linux) do the
privileged parts before that interpreter starts; otherwise the worker does them itself.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from openenv.core.errors import EnvExecutionError
from openenv.envs.repl.config import Limits
from openenv.envs.repl.identity import Identity, is_root, kill_group, kill_uid

WORKER_FILES = ("worker.py", "worker_support.py")
READ_LIMIT = 64 << 20
UNSHARE = shutil.which("unshare", path="/usr/bin:/bin")
SETPRIV = shutil.which("setpriv", path="/usr/bin:/bin")
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); import worker; worker.main()"


def install_worker(root: str) -> str:
    """Copy the worker modules into ``root/lib``; returns that directory."""
    lib = os.path.join(root, "lib")
    os.makedirs(lib, mode=0o755, exist_ok=True)
    os.chmod(lib, 0o755)
    here = Path(__file__).parent
    for name in WORKER_FILES:
        target = os.path.join(lib, name)
        with open(target, "w", encoding="utf-8") as f:
            f.write((here / name).read_text(encoding="utf-8"))
        os.chmod(target, 0o644)
    return lib


@dataclass
class WorkerProcess:
    """One running worker: its process, greeting, in-flight requests and reader task."""

    proc: asyncio.subprocess.Process
    hello: dict
    pending: dict[int, asyncio.Future[dict]] = field(default_factory=dict)
    llm_tasks: set[asyncio.Task[None]] = field(default_factory=set)
    reader: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        """The process runs and its reply pipe is still being read."""
        return self.proc.returncode is None and self.reader is not None and not self.reader.done()

    async def send(self, msg: dict) -> None:
        """Write one command line to the worker."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        await self.proc.stdin.drain()


async def spawn(limits: Limits, ident: Identity, workdir: str, lib: str, init: dict) -> WorkerProcess:
    """Start a confined worker in ``workdir`` and load ``init`` into it."""
    cfg = {
        "cwd": workdir,
        "uid": ident.uid,
        "gid": ident.gid,
        "network": limits.network,
        "rlimits": {**limits.rlimits(), "RLIMIT_NPROC": _nproc(limits)},
        "output_chars": limits.output_chars,
        "repr_chars": limits.repr_chars,
    }
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir,
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    prefix = _launcher(limits, ident, cfg)
    try:
        proc = await asyncio.create_subprocess_exec(
            *prefix, limits.interpreter(), "-I", "-S", "-B", "-c", BOOT, lib, json.dumps(cfg),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, env=env, cwd=workdir, limit=READ_LIMIT,
        )
    except OSError as exc:
        raise EnvExecutionError(f"could not start the REPL worker: {exc}") from exc
    try:
        hello, ready = await asyncio.wait_for(_handshake(proc, init), limits.start_timeout_s)
    except (asyncio.TimeoutError, OSError, ValueError, EnvExecutionError) as exc:
        await kill(proc, ident)
        stderr = await _drain(proc.stderr)
        detail = exc.message if isinstance(exc, EnvExecutionError) else type(exc).__name__
        raise EnvExecutionError(f"the REPL worker failed to start: {detail} {stderr}".strip()) from exc
    hello["variables"] = ready.get("variables", [])
    return WorkerProcess(proc, hello)


def _launcher(limits: Limits, ident: Identity, cfg: dict) -> list[str]:
    """``unshare``/``setpriv`` in front of the interpreter, when present (see worker_support.confine)."""
    prefix: list[str] = []
    if not limits.network and is_root() and UNSHARE:
        prefix += [UNSHARE, "--net", "--ipc", "--"]  # SysV IPC objects die with the worker
        cfg["netns_done"] = True
    if SETPRIV:
        prefix.append(SETPRIV)
        if ident.uid is not None:
            prefix += [f"--reuid={ident.uid}", f"--regid={ident.gid}", "--clear-groups"]
        if _setpriv_has_pdeathsig():  # the worker dies with the server, even if the server is SIGKILLed
            prefix += ["--pdeathsig", "SIGKILL"]
        prefix += ["--no-new-privs", "--"]
        cfg["nnp_done"] = True
    return prefix


@functools.lru_cache(maxsize=1)
def _setpriv_has_pdeathsig() -> bool:
    try:
        out = subprocess.run([SETPRIV or "setpriv", "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--pdeathsig" in out.stdout


def _nproc(limits: Limits) -> int:
    if is_root():
        return limits.max_processes
    # Without root, RLIMIT_NPROC counts every process of our user: allow what exists plus the cap.
    mine = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                mine += entry.stat().st_uid == os.getuid()
            except OSError:
                continue
    return mine + limits.max_processes


async def _handshake(proc: asyncio.subprocess.Process, init: dict) -> tuple[dict, dict]:
    assert proc.stdout is not None and proc.stdin is not None
    hello = json.loads(await proc.stdout.readline() or b"null")
    if not isinstance(hello, dict) or hello.get("op") != "hello":
        raise EnvExecutionError(str(hello.get("error") if isinstance(hello, dict) else "no greeting"))
    proc.stdin.write((json.dumps(init) + "\n").encode())
    await proc.stdin.drain()
    ready = json.loads(await proc.stdout.readline() or b"null")
    if not isinstance(ready, dict) or ready.get("op") != "ready":
        raise EnvExecutionError("the worker did not load the episode")
    return hello, ready


async def kill(proc: asyncio.subprocess.Process, ident: Identity | None) -> None:
    """SIGKILL the worker's process group and, as root, every process of its uid; reap it."""
    kill_group(proc.pid)
    if ident is not None and ident.uid is not None:
        await asyncio.to_thread(kill_uid, ident.uid)
    await wait_exit(proc, 5.0)


async def wait_exit(proc: asyncio.subprocess.Process, timeout: float) -> int | None:
    """The exit status once the process ended, or ``None`` if it is still running after ``timeout``."""
    try:
        return await asyncio.wait_for(proc.wait(), timeout)
    except asyncio.TimeoutError:
        return proc.returncode


async def _drain(stream: asyncio.StreamReader | None) -> str:
    if stream is None:
        return ""
    try:
        data = await asyncio.wait_for(stream.read(4096), 1.0)
    except (asyncio.TimeoutError, OSError):
        return ""
    return data.decode("utf-8", "replace").strip()[-1000:]
