"""A session's sandbox: one confined worker process, driven over pipes with asyncio.

Each episode gets a never-used worker, taken from the warm pool (``pool.py``) when one
is ready, with its own working directory (and, as root, its own uid); the previous
episode's worker is killed at once and cleaned up in the background.

The worker's lifecycle (start, restart, kill) runs on the shared sandbox loop
(``loop.py``); a cell is written and answered on the caller's own loop, over pipes
no loop keeps watching between calls (``channel.py``), so a cell sent by the server
crosses no thread. A cell that overruns its wall-clock limit gets ``SIGINT`` (the namespace survives); if it
is still running after the grace period (C code holding the GIL, a swallowed
``KeyboardInterrupt``) the worker and everything it started are killed and a
fresh worker is started in the background, and the result says the namespace
was lost.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import signal
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from openenv.core._deadline import with_deadline
from openenv.core.errors import EnvExecutionError
from openenv.envs.repl.config import Limits
from openenv.envs.repl.identity import Identity, kill_group, kill_uid
from openenv.envs.repl.launch import WorkerProcess, kill, load, spawn, wait_exit
from openenv.envs.repl.loop import call_async, submit
from openenv.envs.repl.pool import (
    POOL,
    Warm,
    dirs,
    discard,
    live_sandboxes,
    release_later,
    retire,
    start_cold,
)

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


log = logging.getLogger("openenv.repl")


class Sandbox:
    """A worker process holding one session's namespace.

    ``await start(...)`` then ``await run(code)`` any number of times, then
    ``await close()``. ``run`` may be awaited on any loop (one cell at a time); the
    others on the sandbox loop only.
    """

    def __init__(self, limits: Limits, *, llm: LLMHandler | None = None) -> None:
        self.limits, self.llm = limits, llm
        self.ident: Identity | None = None
        self.workdir: str | None = None
        self._worker: WorkerProcess | None = None
        self._init: dict = {}
        self._next_id = 0
        self._restarting: asyncio.Task[WorkerProcess] | None = None  # on the sandbox loop
        self._settling: Future[None] | None = None  # an abandoned cell's end, awaited on the sandbox loop
        self._closed = False
        self.start_time_s = 0.0
        self.from_pool = False
        live_sandboxes.add(self)

    # -- lifecycle ------------------------------------------------------------
    @property
    def network(self) -> str:
        """'off' when the worker has its own empty network namespace, else 'on'."""
        return self._worker.hello.get("network", "on") if self._worker else "unknown"

    @property
    def worker_pid(self) -> int | None:
        """Process id of the current worker (its process group id too)."""
        return self._worker.proc.pid if self._worker else None

    @property
    def isolation(self) -> str:
        """'root-uids', 'user-namespaces' or 'weak': what confines the current worker."""
        return self._worker.hello.get("isolation", "unknown") if self._worker else "unknown"

    async def start(self, *, context: str | None = None, task_prompt: str | None = None,
                    seed: int | None = None) -> list[str]:
        """Give the episode a never-used worker (the old one is killed); returns variable names."""
        if self._closed:
            raise EnvExecutionError("the REPL sandbox is closed")
        self._init = {"op": "init", "context": context, "task_prompt": task_prompt, "seed": seed}
        loop = asyncio.get_running_loop()
        began = loop.time()
        warm = POOL.take_ready(self.limits)
        self.from_pool = warm is not None
        try:
            if warm is None:
                await self._retire_current()  # first: a cold start may need the uid it frees
                warm = await start_cold(self.limits)
            variables = await self._load(warm, retry=self.from_pool)
            if variables is None:  # a pooled worker that died while waiting: start one now
                await self._retire_current()
                warm, self.from_pool = await start_cold(self.limits), False
                variables = await self._load(warm, retry=False)
            assert variables is not None
            await self._retire_current()  # the old episode's worker dies once the new one is ready
        finally:
            POOL.refill_soon()
        self._worker, self.ident, self.workdir = warm.worker, warm.ident, warm.workdir
        self.start_time_s = loop.time() - began
        return variables

    async def _load(self, warm: Warm, *, retry: bool) -> list[str] | None:
        """Give ``warm`` the episode; on failure retire it, then None (``retry``) or raise."""
        try:
            return await load(warm.worker, self._init, self.limits.start_timeout_s)
        except EnvExecutionError:
            retire(warm)
            if retry:
                return None
            raise
        except BaseException:  # cancelled: the taken worker must not be left running
            retire(warm)
            raise

    async def _spawn(self) -> WorkerProcess:
        """A replacement worker for this episode (same uid and directory), with the episode re-loaded."""
        assert self.ident is not None and self.workdir is not None
        worker = await spawn(self.limits, self.ident, self.workdir, dirs.lib)
        try:
            await load(worker, self._init, self.limits.start_timeout_s)
        except EnvExecutionError:
            await kill(worker, self.ident)
            raise
        return worker

    async def _reply(self, worker: WorkerProcess, rid: int) -> dict:
        """Read the worker's messages until the result of cell ``rid``, answering ``llm_query`` calls.

        ``ConnectionResetError`` when the worker's pipe ends; ``ValueError`` for garbage or an
        oversized line on it (both: a dead worker).
        """
        while True:
            msg = await worker.receive()
            if msg is None:
                raise ConnectionResetError("worker exited")
            op = msg.get("op")
            if op == "result" and msg.get("id") == rid:
                return msg
            if op == "llm":  # answered on the sandbox loop, where the episode's HTTP client lives
                call = submit(self._answer_llm(worker, msg))
                worker.llm_calls.add(call)
                call.add_done_callback(worker.llm_calls.discard)
            # anything else: a late result of a cell given up on

    async def _answer_llm(self, worker: WorkerProcess, msg: dict) -> None:
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
        began = loop.time()
        try:
            await worker.send({"op": "exec", "id": rid, "code": code})
            reply = await with_deadline(self._reply(worker, rid), limit)  # no task per cell
            return self._result(reply, lost=lost)
        except TimeoutError:
            pass
        except (ConnectionResetError, OSError, ValueError):
            return await self._died(worker, began, lost)
        except asyncio.CancelledError:
            self._abandon(worker, rid)
            raise
        worker.interrupt()
        try:
            reply = await with_deadline(self._reply(worker, rid), self.limits.interrupt_grace_s)
        except asyncio.CancelledError:
            self._abandon(worker, rid)
            raise
        except TimeoutError:  # before OSError: TimeoutError is one
            await call_async(self._replace(worker))
            return CellResult(
                Outcome.TIMEOUT, execution_time=loop.time() - began, namespace_lost=True,
                exception=f"TimeoutError: cell exceeded {limit:g}s and did not stop when interrupted; "
                "the worker was killed and restarted, so the namespace was lost",
            )
        except (ConnectionResetError, OSError, ValueError):
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

    def _abandon(self, worker: WorkerProcess, rid: int) -> None:
        """The caller gave up on a running cell: interrupt it (an idle worker ignores that), read its
        result on the sandbox loop, kill the worker if it will not stop."""
        worker.interrupt()

        async def settle() -> None:
            try:
                await asyncio.wait_for(self._reply(worker, rid), self.limits.interrupt_grace_s)
            except (asyncio.TimeoutError, ConnectionResetError, OSError, ValueError):
                await self._replace(worker)

        self._settling = submit(settle())

    async def _died(self, worker: WorkerProcess, began: float, lost: bool) -> CellResult:
        code = await call_async(self._reap_and_replace(worker))
        how = f"signal {-code}" if code is not None and code < 0 else f"status {code}"
        if code == -signal.SIGXCPU:
            how += " (CPU-time limit)"
        return CellResult(
            Outcome.WORKER_DIED, execution_time=asyncio.get_running_loop().time() - began,
            namespace_lost=True,
            exception=f"WorkerDied: the worker exited ({how}); a fresh one was started, the namespace was lost",
        )

    async def _reap_and_replace(self, worker: WorkerProcess) -> int | None:
        code = await wait_exit(worker.proc, 1.0)
        await self._replace(worker)
        return code

    async def _ready_worker(self) -> tuple[WorkerProcess, bool]:
        """The live worker, waiting for a background restart; ``True`` if the namespace was lost."""
        worker = self._worker
        if self._settling is None and self._restarting is None and worker is not None and worker.alive:
            return worker, False  # the common case, on the caller's loop
        return await call_async(self._recover_worker())

    async def _recover_worker(self) -> tuple[WorkerProcess, bool]:
        lost = False
        if self._settling is not None:
            settling, self._settling = self._settling, None
            await asyncio.wait([asyncio.wrap_future(settling)])  # its outcome is the worker's state
        if self._restarting is not None:
            task, self._restarting = self._restarting, None
            try:
                self._worker = await task
            except EnvExecutionError:
                self._worker = None
        if self._worker is None or not self._worker.alive:
            if self._worker is not None:
                await self._kill(self._worker)
            self._worker = await self._spawn()
            lost = True
        return self._worker, lost

    async def _replace(self, worker: WorkerProcess) -> None:
        """Kill ``worker`` now and start its successor in the background (on the sandbox loop)."""
        await self._kill(worker)
        if self._worker is worker:
            self._worker = None
            if not self._closed:
                self._restarting = asyncio.ensure_future(self._spawn())

    # -- teardown -----------------------------------------------------------------
    async def _kill(self, worker: WorkerProcess) -> None:
        await kill(worker, self.ident)

    async def _retire_current(self) -> None:
        """Hand the episode's worker, directory and uid to the background clean-up."""
        await self._discard_worker(retire_now=True)

    async def _discard_worker(self, *, retire_now: bool = False) -> None:
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
                await self._kill(worker)
        worker, self._worker = self._worker, None
        if retire_now and self.ident is not None and self.workdir is not None:
            discard(worker, self.ident, self.workdir)
            self.ident = self.workdir = None
            return
        if worker is not None:
            await self._kill(worker)

    async def close(self) -> None:
        """Kill the worker and everything it started, delete its files, free its uid."""
        if self._closed:
            return
        self._closed = True
        await self._discard_worker()
        if self.workdir is not None and dirs.workdirs is not None:
            await asyncio.to_thread(dirs.workdirs.remove, self.workdir)
        self.workdir = None
        if self.ident is not None:
            ident, self.ident = self.ident, None
            release_later(ident)
        live_sandboxes.discard(self)

    def kill_now(self) -> None:
        """Synchronous last-resort kill (interpreter exit)."""
        if self._worker is not None:
            kill_group(self._worker.proc.pid)
        if self.ident is not None and self.ident.uid is not None:
            kill_uid(self.ident.uid)

