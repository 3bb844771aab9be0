"""Starting and stopping one worker process (the sandbox decides when).

The worker's two stdlib-only modules are copied once into ``<workdirs root>/lib``
(root-owned, 0755/0644: readable by every worker uid, writable by none) and run by the
system interpreter. As root, ``unshare --net --ipc`` and ``setpriv`` (util-linux) do the
privileged parts before that interpreter starts (otherwise the worker does them itself).
Without root, the worker starts under bubblewrap in its own user, PID, mount, IPC, UTS and
network namespaces (``bwrap_args``), with SIGINT ignored by bubblewrap itself (``env
--ignore-signal``) so that an interrupt sent to the process group reaches only the worker
and what it started.

A worker is started (``spawn``: confined, greeted) before it is given an episode (``load``),
so that a pool can keep confined, never-used workers ready. Its process is the sandbox
loop's; its command and reply pipes are a :class:`~openenv.envs.repl.channel.PipeChannel`
that any loop can use (``channel.py``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import signal
import subprocess
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from openenv.core.errors import EnvExecutionError
from openenv.envs.repl.channel import PipeChannel, pipes
from openenv.envs.repl.config import Limits
from openenv.envs.repl.identity import Identity, is_root, kill_group, kill_uid
from openenv.envs.repl.isolation import ROOT_UIDS, USER_NAMESPACES, WEAK, bwrap_path, current_isolation

WORKER_FILES = ("worker.py", "worker_support.py")
READ_LIMIT = 64 << 20
UNSHARE = shutil.which("unshare", path="/usr/bin:/bin")
SETPRIV = shutil.which("setpriv", path="/usr/bin:/bin")
ENV = shutil.which("env", path="/usr/bin:/bin") or "/usr/bin/env"
SANDBOX_LIB, SANDBOX_WORKDIR = "/opt/openenv-repl", "/session"
SYSTEM_DIRS = ("/usr", "/etc")
MERGED_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
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


def command_line(msg: dict) -> bytes:
    """One protocol line: orjson (the cell path's encoder), the stdlib for what it refuses (ints
    beyond 64 bits, say a huge seed)."""
    try:
        return orjson.dumps(msg) + b"\n"
    except TypeError:
        return (json.dumps(msg) + "\n").encode()


@dataclass
class WorkerProcess:
    """One running worker: its process (the sandbox loop's), pipes (any loop's) and greeting."""

    proc: asyncio.subprocess.Process
    channel: PipeChannel
    hello: dict = field(default_factory=dict)
    llm_calls: set[Future[None]] = field(default_factory=set)  # llm_query answers under way
    group_interrupt: bool = False

    @property
    def alive(self) -> bool:
        """The process runs and its reply pipe is open."""
        return self.proc.returncode is None and not self.channel.eof and not self.channel.closed

    async def send(self, msg: dict) -> None:
        """Write one command line to the worker (from any loop)."""
        await self.channel.write(command_line(msg))

    async def receive(self) -> dict | None:
        """The worker's next message; None at end of file; ``ValueError`` for garbage."""
        line = await self.channel.read_line()
        if not line:
            return None
        msg = orjson.loads(line)  # strict: NaN or garbage from the worker is a ValueError
        if not isinstance(msg, dict):
            raise ValueError("a message from the worker is not an object")
        return msg

    def cancel_llm_calls(self) -> None:
        """Stop answering the worker's ``llm_query`` calls (thread-safe)."""
        for call in list(self.llm_calls):
            call.cancel()

    def interrupt(self) -> None:
        """SIGINT the running cell (the namespace survives)."""
        try:
            if self.group_interrupt:
                os.killpg(self.proc.pid, signal.SIGINT)
            else:
                self.proc.send_signal(signal.SIGINT)
        except (ProcessLookupError, PermissionError):
            pass


def bwrap_args(bwrap: str, *, lib: str | None, workdir: str | None, network: bool,
               extra_ro: tuple[str, ...], tmp_bytes: int = 64 << 20) -> list[str]:
    """bubblewrap in front of the worker: fresh namespaces, system dirs read-only, private work dir and /tmp."""
    args = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        args.append("--unshare-net")
    args += ["--die-with-parent", "--hostname", "repl"]
    for path in SYSTEM_DIRS:
        args += ["--ro-bind", path, path]
    for path in MERGED_DIRS:  # /bin -> usr/bin on merged-/usr systems; a real directory elsewhere
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in extra_ro:
        args += ["--ro-bind", path, path]
    size = str(tmp_bytes)
    args += ["--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
             "--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/var/tmp"]
    if lib is not None:
        args += ["--ro-bind", lib, SANDBOX_LIB]
    if workdir is not None:
        args += ["--bind", workdir, SANDBOX_WORKDIR, "--chdir", SANDBOX_WORKDIR]
    return [*args, "--"]


def _interpreter_dirs(interpreter: str) -> tuple[str, ...]:
    """Read-only binds a worker interpreter outside the system directories needs (its installation prefix)."""
    real = os.path.realpath(interpreter)
    if any(real.startswith(d + os.sep) for d in (*SYSTEM_DIRS, *MERGED_DIRS)):
        return ()
    return (os.path.dirname(os.path.dirname(real)),)


async def spawn(limits: Limits, ident: Identity, workdir: str, lib: str) -> WorkerProcess:
    """Start a confined worker in ``workdir``; it greets, then waits for :func:`load`."""
    namespaced = ident.uid is None and current_isolation() == USER_NAMESPACES
    inner_lib, inner_workdir = (SANDBOX_LIB, SANDBOX_WORKDIR) if namespaced else (lib, workdir)
    cfg = {
        "cwd": inner_workdir,
        "uid": ident.uid,
        "gid": ident.gid,
        "network": limits.network,
        "rlimits": {**limits.rlimits(), "RLIMIT_NPROC": _nproc(limits)},
        "output_chars": limits.output_chars,
        "repr_chars": limits.repr_chars,
    }
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": inner_workdir, "TMPDIR": inner_workdir,
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    if namespaced:
        bwrap = bwrap_path()
        assert bwrap is not None
        prefix = [ENV, "--ignore-signal=INT", *bwrap_args(
            bwrap, lib=lib, workdir=workdir, network=limits.network,
            extra_ro=_interpreter_dirs(limits.interpreter()), tmp_bytes=limits.file_mb << 20)]
        cfg["nnp_done"] = True  # bubblewrap sets no_new_privs and drops every capability
        cfg["rlimits"]["RLIMIT_NPROC"] = limits.max_processes  # counted per user namespace
    else:
        prefix = _launcher(limits, ident, cfg)
    (child_in, command_fd), (reply_fd, child_out) = pipes()
    channel = PipeChannel(command_fd, reply_fd, limit=READ_LIMIT)
    try:
        proc = await asyncio.create_subprocess_exec(
            *prefix, limits.interpreter(), "-I", "-S", "-B", "-c", BOOT, inner_lib, json.dumps(cfg),
            stdin=child_in, stdout=child_out, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, env=env, cwd=workdir,
        )
    except OSError as exc:
        channel.close()
        raise EnvExecutionError(f"could not start the REPL worker: {exc}") from exc
    finally:
        os.close(child_in)
        os.close(child_out)
    worker = WorkerProcess(proc, channel, group_interrupt=namespaced)
    try:
        hello = await asyncio.wait_for(_greeting(worker), limits.start_timeout_s)
    except (asyncio.TimeoutError, OSError, ValueError, EnvExecutionError) as exc:
        await kill(worker, ident)
        stderr = await _drain(proc.stderr)
        detail = exc.message if isinstance(exc, EnvExecutionError) else type(exc).__name__
        raise EnvExecutionError(f"the REPL worker failed to start: {detail} {stderr}".strip()) from exc
    except BaseException:  # cancelled while it greeted
        await asyncio.shield(kill(worker, ident))
        raise
    hello["isolation"] = USER_NAMESPACES if namespaced else (ROOT_UIDS if ident.uid is not None else WEAK)
    worker.hello = hello
    return worker


async def load(worker: WorkerProcess, init: dict, timeout_s: float) -> list[str]:
    """Give a greeted worker its episode (context, task, seed); returns its variable names."""
    try:
        await worker.send(init)
        ready = await asyncio.wait_for(worker.receive(), timeout_s)
    except (asyncio.TimeoutError, OSError, ValueError, RuntimeError) as exc:
        raise EnvExecutionError(f"the REPL worker did not load the episode: {type(exc).__name__}") from exc
    if not isinstance(ready, dict) or ready.get("op") != "ready":
        raise EnvExecutionError("the REPL worker did not load the episode")
    return list(ready.get("variables", []))


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


async def _greeting(worker: WorkerProcess) -> dict:
    hello = await worker.receive()
    if not isinstance(hello, dict) or hello.get("op") != "hello":
        raise EnvExecutionError(str(hello.get("error") if isinstance(hello, dict) else "no greeting"))
    return hello


async def kill(worker: WorkerProcess, ident: Identity | None) -> None:
    """SIGKILL the worker's process group and, as root, every process of its uid; reap it, close its pipes."""
    worker.cancel_llm_calls()
    kill_group(worker.proc.pid)
    try:
        if ident is not None and ident.uid is not None:
            await asyncio.to_thread(kill_uid, ident.uid)
        await wait_exit(worker.proc, 5.0)
    finally:
        worker.channel.close()


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
