"""Warm workers: a small pool of confined, never-used workers, so a reset need not wait for one to start.

A reset takes a worker from the pool (:meth:`WarmPool.take`) and a fresh one is started
behind it; a worker is never handed out twice (each comes with its own working directory
and, as root, its own uid). The pool holds at most ``Limits.warm_workers`` workers, for the
limits most recently asked for (a different set of limits empties it), so an idle server
holds no more than that. Everything here runs on the sandbox loop (``loop.py``).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import weakref
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from openenv.core.errors import EnvExecutionError
from openenv.envs.repl.config import Limits
from openenv.envs.repl.identity import Identity, Workdirs, acquire_identity, kill_group, kill_uid, release_all
from openenv.envs.repl.isolation import require_isolation
from openenv.envs.repl.launch import WorkerProcess, install_worker, kill, spawn

__all__ = ["POOL", "Warm", "WarmPool", "discard", "dirs", "release_later", "retire", "start_cold"]

log = logging.getLogger("openenv.repl")
_release_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="openenv-repl-release")
_background: set[asyncio.Future[None]] = set()
_to_release: list[Identity] = []
_to_release_lock = threading.Lock()
REFILL_DELAY_S = 0.005  # lets the reset's reply leave before a replacement is forked
CLEANUP_DELAY_S = 0.005  # the same for reaping a retired worker (it was SIGKILLed at once)


@dataclass
class Warm:
    """A started worker with the uid and working directory that are its alone."""

    worker: WorkerProcess
    ident: Identity
    workdir: str


class _Dirs:
    """The server's parent working directory and worker code, made on first use, removed at exit."""

    def __init__(self) -> None:
        self.workdirs: Workdirs | None = None
        self.lib = ""

    def get(self) -> Workdirs:
        if self.workdirs is None:
            require_isolation()
            self.workdirs = Workdirs()
            self.lib = install_worker(self.workdirs.root)
            atexit.register(_cleanup_all, self.workdirs)
        return self.workdirs


dirs = _Dirs()
live_sandboxes: weakref.WeakSet = weakref.WeakSet()


async def start_cold(limits: Limits) -> Warm:
    """Reserve a uid (as root), make a working directory and start a worker there."""
    root = dirs.get()
    ident = await asyncio.to_thread(acquire_identity)
    workdir = root.create(ident)
    try:
        worker = await spawn(limits, ident, workdir, dirs.lib)
    except BaseException:
        root.remove(workdir)
        release_later(ident)
        raise
    return Warm(worker, ident, workdir)


def retire(warm: Warm) -> None:
    """Kill a worker's process group now; reap it, delete its directory and free its uid in the background."""
    discard(warm.worker, warm.ident, warm.workdir)


def discard(worker: WorkerProcess | None, ident: Identity, workdir: str) -> None:
    """:func:`retire` for a uid and directory whose worker may already be gone (``None``)."""
    if worker is not None:
        kill_group(worker.proc.pid)
    fut = asyncio.ensure_future(_retire(worker, ident, workdir))
    _background.add(fut)
    fut.add_done_callback(_background.discard)


async def _retire(worker: WorkerProcess | None, ident: Identity, workdir: str) -> None:
    await asyncio.sleep(CLEANUP_DELAY_S)
    if worker is not None:
        await kill(worker, ident)
    elif ident.uid is not None:
        await asyncio.to_thread(kill_uid, ident.uid)
    if dirs.workdirs is not None:
        await asyncio.to_thread(dirs.workdirs.remove, workdir)
    release_later(ident)


def release_later(ident: Identity) -> None:
    """Scrubbing /tmp takes a while: give the uid back in the background.

    Uids waiting together are released together, with one walk of /tmp, so a burst of closed
    sessions costs one walk rather than one each (a queue of walks once outgrew the time a
    waiting reset allows).
    """
    with _to_release_lock:
        _to_release.append(ident)
    fut = asyncio.get_running_loop().run_in_executor(_release_pool, _release_waiting)
    _background.add(fut)
    fut.add_done_callback(_released)


def _release_waiting() -> None:
    with _to_release_lock:
        batch = _to_release[:]
        _to_release.clear()
    if batch:
        release_all(batch)


def _released(fut: asyncio.Future[None]) -> None:
    _background.discard(fut)
    if not fut.cancelled() and fut.exception() is not None:
        log.warning("could not release a REPL worker uid: %s", fut.exception())


class WarmPool:
    """Up to ``limits.warm_workers`` started, unused workers for the limits last asked for."""

    def __init__(self) -> None:
        self.limits: Limits | None = None
        self.idle: deque[Warm] = deque()
        self.filling: set[asyncio.Task[None]] = set()

    def take_ready(self, limits: Limits) -> Warm | None:
        """A started, never-used worker for ``limits``, or None when none is ready (then start one cold)."""
        if limits != self.limits:
            self.flush()
            self.limits = limits
        while self.idle:
            candidate = self.idle.popleft()
            if candidate.worker.proc.returncode is None:
                return candidate
            retire(candidate)
        return None

    def refill_soon(self) -> None:
        """Refill once the reset that took a worker has answered (so the new start does not delay it)."""
        asyncio.get_running_loop().call_later(REFILL_DELAY_S, self.refill)

    def refill(self) -> None:
        """Start workers until idle plus starting ones make ``warm_workers``."""
        limits = self.limits
        if limits is None:
            return
        for _ in range(max(0, limits.warm_workers - len(self.idle) - len(self.filling))):
            task = asyncio.ensure_future(self._fill(limits))
            self.filling.add(task)
            task.add_done_callback(self.filling.discard)

    async def _fill(self, limits: Limits) -> None:
        try:
            warm = await start_cold(limits)
        except (EnvExecutionError, RuntimeError, OSError) as exc:
            log.warning("could not start a warm REPL worker: %s", exc)
            return
        if limits == self.limits and len(self.idle) < limits.warm_workers:
            self.idle.append(warm)
        else:
            retire(warm)

    def flush(self) -> None:
        """Retire every idle worker (workers being started are retired when they are ready)."""
        self.limits = None
        while self.idle:
            retire(self.idle.popleft())

    def kill_now(self) -> None:
        """Synchronous last-resort kill of idle workers (interpreter exit)."""
        for warm in self.idle:
            kill_group(warm.worker.proc.pid)
            if warm.ident.uid is not None:
                kill_uid(warm.ident.uid)
        self.idle.clear()


POOL = WarmPool()


def _cleanup_all(workdirs: Workdirs) -> None:
    for box in list(live_sandboxes):
        box.kill_now()
    POOL.kill_now()
    workdirs.remove(workdirs.root)
