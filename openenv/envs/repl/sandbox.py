"""A session's sandbox: one confined worker process, driven over pipes with asyncio.

Every coroutine here runs on the shared sandbox loop (``loop.py``). A cell that
overruns its wall-clock limit gets ``SIGINT`` (the namespace survives); if it
is still running after the grace period (C code holding the GIL, a swallowed
``KeyboardInterrupt``) the worker and everything it started are killed and a
fresh worker is started in the background, and the result says the namespace
was lost.
"""

from __future__ import annotations

import asyncio
import atexit
import enum
import json
import os
import shutil
import signal
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from openenv.core.errors import EnvExecutionError
from openenv.envs.repl.config import Limits
from openenv.envs.repl.identity import Identity, Workdirs, acquire_identity, is_root, kill_group, kill_uid

WORKER_SOURCE = Path(__file__).with_name("worker.py").read_text(encoding="utf-8")
READ_LIMIT = 64 << 20
UNSHARE = shutil.which("unshare", path="/usr/bin:/bin")
SETPRIV = shutil.which("setpriv", path="/usr/bin:/bin")

LLMHandler = Callable[[list[str], "str | None"], Awaitable[list[str]]]


class Outcome(str, enum.Enum):
    """Why a cell ended."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    WORKER_DIED = "worker_died"


@dataclass
class CellResult:
    """What one cell did, as reported by the worker (or by the sandbox when it had to kill it)."""

    outcome: Outcome
    stdout: str = ""
    stderr: str = ""
    stdout_chars: int = 0
    stderr_chars: int = 0
    exception: str | None = None
    locals_snapshot: dict[str, str] = field(default_factory=dict)
    variables: list[str] = field(default_factory=list)
    execution_time: float = 0.0
    final_answer: str | None = None
    namespace_lost: bool = False

    @property
    def success(self) -> bool:
        """True when the cell ran to completion without raising."""
        return self.outcome is Outcome.OK


_workdirs: Workdirs | None = None
_live: weakref.WeakSet[Sandbox] = weakref.WeakSet()


def _dirs() -> Workdirs:
    global _workdirs
    if _workdirs is None:
        _workdirs = Workdirs()
        atexit.register(_cleanup_all, _workdirs)
    return _workdirs


def _drop_dirs_if_idle() -> None:
    """Remove the parent working directory once no sandbox is open (a new one is made on demand)."""
    global _workdirs
    if _workdirs is not None and not any(box.workdir for box in _live):
        _workdirs.remove(_workdirs.root)
        _workdirs = None


def _cleanup_all(dirs: Workdirs) -> None:
    for box in list(_live):
        box.kill_now()
    dirs.remove(dirs.root)


class _Worker:
    """One running worker process and its reader task."""

    def __init__(self, proc: asyncio.subprocess.Process, hello: dict) -> None:
        self.proc, self.hello = proc, hello
        self.pending: dict[int, asyncio.Future[dict]] = {}
        self.llm_tasks: set[asyncio.Task[None]] = set()
        self.reader: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None and self.reader is not None and not self.reader.done()

    async def send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        await self.proc.stdin.drain()


class Sandbox:
    """A worker process holding one session's namespace.

    ``await start(...)`` then ``await run(code)`` any number of times, then
    ``await close()``. Call these on the sandbox loop only.
    """

    def __init__(self, limits: Limits, *, llm: LLMHandler | None = None) -> None:
        self.limits, self.llm = limits, llm
        self.ident: Identity | None = None
        self.workdir: str | None = None
        self._worker: _Worker | None = None
        self._init: dict = {}
        self._next_id = 0
        self._restarting: asyncio.Task[_Worker] | None = None
        self._settling: asyncio.Task[None] | None = None
        self._closed = False
        self.start_time_s = 0.0
        _live.add(self)

    # -- lifecycle ------------------------------------------------------------
    @property
    def network(self) -> str:
        """'off' when the worker has its own empty network namespace, else 'on'."""
        return self._worker.hello.get("network", "on") if self._worker else "unknown"

    @property
    def worker_pid(self) -> int | None:
        """Process id of the current worker (its process group id too)."""
        return self._worker.proc.pid if self._worker else None

    async def start(self, *, context: str | None = None, task_prompt: str | None = None,
                    seed: int | None = None) -> list[str]:
        """Start a fresh worker (killing any old one) and load the episode; returns variable names."""
        if self._closed:
            raise EnvExecutionError("the REPL sandbox is closed")
        await self._discard_worker()
        if self.ident is None:
            self.ident = await asyncio.to_thread(acquire_identity)
        if self.workdir is None:
            self.workdir = _dirs().create(self.ident)
        self._init = {"op": "init", "context": context, "task_prompt": task_prompt, "seed": seed}
        loop = asyncio.get_running_loop()
        began = loop.time()
        self._worker = await self._spawn()
        self.start_time_s = loop.time() - began
        return self._worker.hello.get("variables", [])

    async def _spawn(self) -> _Worker:
        assert self.ident is not None and self.workdir is not None
        cfg = {
            "cwd": self.workdir,
            "uid": self.ident.uid,
            "gid": self.ident.gid,
            "network": self.limits.network,
            "rlimits": {**self.limits.rlimits(), "RLIMIT_NPROC": self._nproc()},
            "output_chars": self.limits.output_chars,
            "repr_chars": self.limits.repr_chars,
        }
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.workdir, "TMPDIR": self.workdir,
               "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        prefix = self._launcher(cfg)
        try:
            proc = await asyncio.create_subprocess_exec(
                *prefix, self.limits.interpreter(), "-I", "-S", "-B", "-c", WORKER_SOURCE, json.dumps(cfg),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True, env=env, cwd=self.workdir,
                limit=READ_LIMIT,
            )
        except OSError as exc:
            raise EnvExecutionError(f"could not start the REPL worker: {exc}") from exc
        try:
            hello, ready = await asyncio.wait_for(self._handshake(proc), self.limits.start_timeout_s)
        except (asyncio.TimeoutError, OSError, ValueError, EnvExecutionError) as exc:
            await self._kill(proc)
            stderr = await _drain(proc.stderr)
            detail = exc.message if isinstance(exc, EnvExecutionError) else type(exc).__name__
            raise EnvExecutionError(f"the REPL worker failed to start: {detail} {stderr}".strip()) from exc
        hello["variables"] = ready.get("variables", [])
        worker = _Worker(proc, hello)
        worker.reader = asyncio.ensure_future(self._read(worker))
        return worker

    def _launcher(self, cfg: dict) -> list[str]:
        """``unshare``/``setpriv`` in front of the interpreter, when present (see worker.confine)."""
        assert self.ident is not None
        prefix: list[str] = []
        if not self.limits.network and is_root() and UNSHARE:
            prefix += [UNSHARE, "--net", "--"]
            cfg["netns_done"] = True
        if SETPRIV:
            prefix.append(SETPRIV)
            if self.ident.uid is not None:
                prefix += [f"--reuid={self.ident.uid}", f"--regid={self.ident.gid}", "--clear-groups"]
            prefix += ["--no-new-privs", "--"]
            cfg["nnp_done"] = True
        return prefix

    async def _handshake(self, proc: asyncio.subprocess.Process) -> tuple[dict, dict]:
        assert proc.stdout is not None and proc.stdin is not None
        hello = json.loads(await proc.stdout.readline() or b"null")
        if not isinstance(hello, dict) or hello.get("op") != "hello":
            reason = hello.get("error") if isinstance(hello, dict) else "no greeting"
            raise EnvExecutionError(f"{reason}")
        proc.stdin.write((json.dumps(self._init) + "\n").encode())
        await proc.stdin.drain()
        ready = json.loads(await proc.stdout.readline() or b"null")
        if not isinstance(ready, dict) or ready.get("op") != "ready":
            raise EnvExecutionError("the worker did not load the episode")
        return hello, ready

    def _nproc(self) -> int:
        if is_root():
            return self.limits.max_processes
        # Without root, RLIMIT_NPROC counts every process of our user: allow what exists plus the cap.
        mine = 0
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    mine += entry.stat().st_uid == os.getuid()
                except OSError:
                    continue
        return mine + self.limits.max_processes

    async def _read(self, worker: _Worker) -> None:
        assert worker.proc.stdout is not None
        try:
            while True:
                line = await worker.proc.stdout.readline()
                if not line:
                    break
                msg = json.loads(line)
                if not isinstance(msg, dict):
                    break
                if msg.get("op") == "result":
                    fut = worker.pending.pop(msg.get("id"), None)
                    if fut is not None and not fut.done():
                        fut.set_result(msg)
                elif msg.get("op") == "llm":
                    task = asyncio.ensure_future(self._answer_llm(worker, msg))
                    worker.llm_tasks.add(task)
                    task.add_done_callback(worker.llm_tasks.discard)
        except (ValueError, OSError):
            pass  # garbage or an oversized line on the protocol pipe: treat as a dead worker
        finally:
            for fut in worker.pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionResetError("worker exited"))
            worker.pending.clear()

    async def _answer_llm(self, worker: _Worker, msg: dict) -> None:
        reply: dict = {"op": "llm_result", "id": msg.get("id")}
        prompts = msg.get("prompts")
        if self.llm is None:
            reply["error"] = "llm_query is not configured on this server (set OPENENV_REPL_LLM_BASE_URL)"
        elif not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
            reply["error"] = "llm_query: prompts must be strings"
        else:
            try:
                reply["results"] = list(await self.llm(prompts, msg.get("model")))
            except Exception as exc:  # the LLM layer's errors become the cell's RuntimeError
                reply["error"] = str(exc) or type(exc).__name__
        try:
            await worker.send(reply)
        except (OSError, RuntimeError):
            pass

    # -- cells ------------------------------------------------------------------
    async def run(self, code: str, *, timeout_s: float | None = None) -> CellResult:
        """Run one cell; always returns a result (timeouts and deaths included)."""
        if self._closed:
            raise EnvExecutionError("the REPL sandbox is closed")
        worker, lost = await self._ready_worker()
        loop = asyncio.get_running_loop()
        limit = timeout_s if timeout_s is not None else self.limits.cell_timeout_s
        self._next_id += 1
        rid = self._next_id
        fut: asyncio.Future[dict] = loop.create_future()
        worker.pending[rid] = fut
        began = loop.time()
        try:
            await worker.send({"op": "exec", "id": rid, "code": code})
            reply = await asyncio.wait_for(asyncio.shield(fut), limit)
            return self._result(reply, lost=lost)
        except asyncio.TimeoutError:
            pass
        except (ConnectionResetError, OSError, RuntimeError):
            return await self._died(worker, began, lost)
        except asyncio.CancelledError:
            self._abandon(worker, fut)
            raise
        _signal(worker.proc, signal.SIGINT)
        try:
            reply = await asyncio.wait_for(asyncio.shield(fut), self.limits.interrupt_grace_s)
        except asyncio.CancelledError:
            self._abandon(worker, fut)
            raise
        except asyncio.TimeoutError:
            await self._replace(worker)
            return CellResult(
                Outcome.TIMEOUT, execution_time=loop.time() - began, namespace_lost=True,
                exception=f"TimeoutError: cell exceeded {limit:g}s and did not stop when interrupted; "
                "the worker was killed and restarted, so the namespace was lost",
            )
        except (ConnectionResetError, OSError):
            return await self._died(worker, began, lost)
        result = self._result(reply, lost=lost)
        result.outcome = Outcome.TIMEOUT
        result.exception = f"TimeoutError: cell exceeded {limit:g}s and was interrupted (namespace kept)"
        return result

    def _result(self, reply: dict, *, lost: bool) -> CellResult:
        kind = reply.get("kind")
        outcome = {"ok": Outcome.OK, "memory": Outcome.MEMORY, "interrupted": Outcome.TIMEOUT}.get(
            kind, Outcome.ERROR)
        return CellResult(
            outcome,
            stdout=str(reply.get("stdout", "")),
            stderr=str(reply.get("stderr", "")),
            stdout_chars=int(reply.get("stdout_chars", 0)),
            stderr_chars=int(reply.get("stderr_chars", 0)),
            exception=reply.get("exception"),
            locals_snapshot={str(k): str(v) for k, v in dict(reply.get("locals") or {}).items()},
            variables=[str(v) for v in reply.get("variables") or []],
            execution_time=float(reply.get("elapsed", 0.0)),
            final_answer=reply.get("final") if isinstance(reply.get("final"), str) else None,
            namespace_lost=lost,
        )

    def _abandon(self, worker: _Worker, fut: asyncio.Future[dict]) -> None:
        """The caller gave up on a running cell: interrupt it, kill the worker if it will not stop."""
        if fut.done():
            return
        _signal(worker.proc, signal.SIGINT)

        async def settle() -> None:
            try:
                await asyncio.wait_for(fut, self.limits.interrupt_grace_s)
            except (asyncio.TimeoutError, ConnectionResetError, OSError):
                await self._replace(worker)

        self._settling = asyncio.ensure_future(settle())

    async def _died(self, worker: _Worker, began: float, lost: bool) -> CellResult:
        code = await _wait_exit(worker.proc, 1.0)
        await self._replace(worker)
        how = f"signal {-code}" if code is not None and code < 0 else f"status {code}"
        if code == -signal.SIGXCPU:
            how += " (CPU-time limit)"
        return CellResult(
            Outcome.WORKER_DIED, execution_time=asyncio.get_running_loop().time() - began,
            namespace_lost=True,
            exception=f"WorkerDied: the worker exited ({how}); a fresh one was started, the namespace was lost",
        )

    async def _ready_worker(self) -> tuple[_Worker, bool]:
        """The live worker, waiting for a background restart; ``True`` if the namespace was lost."""
        lost = False
        if self._settling is not None:
            settling, self._settling = self._settling, None
            await settling
        if self._restarting is not None:
            task, self._restarting = self._restarting, None
            try:
                self._worker = await task
            except EnvExecutionError:
                self._worker = None
        if self._worker is None or not self._worker.alive:
            if self._worker is not None:
                await self._kill(self._worker.proc)
            self._worker = await self._spawn()
            lost = True
        return self._worker, lost

    async def _replace(self, worker: _Worker) -> None:
        """Kill ``worker`` now and start its successor in the background."""
        await self._kill(worker.proc)
        if self._worker is worker:
            self._worker = None
            if not self._closed:
                self._restarting = asyncio.ensure_future(self._spawn())

    # -- teardown -----------------------------------------------------------------
    async def _kill(self, proc: asyncio.subprocess.Process) -> None:
        kill_group(proc.pid)
        if self.ident is not None and self.ident.uid is not None:
            await asyncio.to_thread(kill_uid, self.ident.uid)
        await _wait_exit(proc, 5.0)

    async def _discard_worker(self) -> None:
        if self._settling is not None:
            self._settling.cancel()
            self._settling = None
        if self._restarting is not None:
            task, self._restarting = self._restarting, None
            task.cancel()
            try:
                worker = await task
            except (asyncio.CancelledError, EnvExecutionError):
                worker = None
            if worker is not None:
                await self._kill(worker.proc)
        if self._worker is not None:
            worker, self._worker = self._worker, None
            for task in list(worker.llm_tasks):
                task.cancel()
            await self._kill(worker.proc)

    async def close(self) -> None:
        """Kill the worker and everything it started, delete its files, free its uid."""
        if self._closed:
            return
        self._closed = True
        await self._discard_worker()
        if self.workdir is not None:
            await asyncio.to_thread(_dirs().remove, self.workdir)
            self.workdir = None
        if self.ident is not None:
            self.ident.release()
            self.ident = None
        _live.discard(self)
        _drop_dirs_if_idle()

    def kill_now(self) -> None:
        """Synchronous last-resort kill (interpreter exit)."""
        if self._worker is not None:
            kill_group(self._worker.proc.pid)
        if self.ident is not None and self.ident.uid is not None:
            kill_uid(self.ident.uid)


def _signal(proc: asyncio.subprocess.Process, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        pass


async def _wait_exit(proc: asyncio.subprocess.Process, timeout: float) -> int | None:
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
