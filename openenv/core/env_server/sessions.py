"""Sessions: one environment instance each, counted against one cap, reaped when idle."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from openenv.core._deadline import SerialDeadline
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.serialization import safe_error_text
from openenv.core.errors import CapacityError, FactoryError, SessionNotFoundError

__all__ = ["Session", "SessionManager"]

log = logging.getLogger("openenv.server")
# Sessions no connection holds (HTTP ``X-OpenEnv-Session``, ``/mcp`` session/create): when the cap is
# reached they cannot lock out a connected client, which reclaims the longest idle of them.
CONNECTIONLESS_KINDS = frozenset({"http", "mcp"})


@dataclass(eq=False)
class Session:
    """One environment instance and its episode bookkeeping."""

    id: str
    kind: str
    env: Any
    created_at: float = field(default_factory=time.time)
    last_active: float = field(default_factory=time.monotonic)
    episode_id: str | None = None
    step_count: int = 0
    reset_done: bool = False
    done: bool = False
    busy: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    deadline: SerialDeadline = field(default_factory=SerialDeadline)  # for calls under ``lock``
    pending: asyncio.Future | Future | None = None
    owned: bool = True
    on_close: Callable[[str], None] | None = None
    attached: bool = False  # a WebSocket joined it with /ws?session_id= (it owns it meanwhile)
    close_when_detached: bool = False  # openenv/session/close arrived while attached
    running: asyncio.Task | None = None  # the task running a step under ``lock`` (what a reset interrupts)
    interrupted: str | None = None  # why that step was interrupted
    renew: Callable[[], Awaitable[None]] | None = None  # a fresh env from the factory (sessions owning theirs)

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def interrupt(self, reason: str) -> bool:
        """End the step running on this session's own environment (a reset arrived): its task is
        cancelled and the step answers :class:`StepInterruptedError`. False when none runs, or
        when the environment is shared (another session's step is never ended from here)."""
        task = self.running
        if task is None or task.done() or not self.owned or self.interrupted is not None:
            return False
        self.interrupted = reason
        task.cancel()
        return True

    def describe(self) -> dict[str, Any]:
        return {
            "session_id": self.id,
            "kind": self.kind,
            "created_at": self.created_at,
            "idle_s": round(time.monotonic() - self.last_active, 3),
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "done": self.done,
            "busy": self.busy,
            "attached": self.attached,
        }


class SessionManager:
    """Creates, finds, closes and reaps sessions; builds environments via ``factory``."""

    def __init__(
        self,
        factory: Callable[[], Any],
        *,
        max_sessions: int,
        idle_timeout_s: float | None,
        executor: ThreadPoolExecutor,
        shared_instance: bool = False,
    ) -> None:
        self.factory = factory
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.executor = executor
        self.shared_instance = shared_instance
        self._sessions: dict[str, Session] = {}
        self._reserved = 0
        self._reaper: asyncio.Task | None = None

    @property
    def active(self) -> int:
        return len(self._sessions) + self._reserved

    def list(self) -> list[dict[str, Any]]:
        return [s.describe() for s in self._sessions.values()]

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFoundError(f"No such session: {session_id!r} (closed, reaped or never opened)")
        session.touch()
        return session

    async def create(self, kind: str) -> Session:
        """Open a session; raises CapacityError or FactoryError. At the cap, a connected kind
        (``ws``, ``mcp-ws``, ``web``...) closes the longest-idle connectionless session first."""
        if self.active >= self.max_sessions and kind not in CONNECTIONLESS_KINDS:
            await self._reclaim_connectionless()
        if self.active >= self.max_sessions:
            raise CapacityError(
                f"Server at capacity: {self.active}/{self.max_sessions} sessions in use",
                active_sessions=self.active,
                max_sessions=self.max_sessions,
            )
        self._reserved += 1
        try:
            env = await self.build_env()
        finally:
            self._reserved -= 1
        session = Session(id=uuid.uuid4().hex, kind=kind, env=env, owned=not self.shared_instance)
        if session.owned:
            session.renew = functools.partial(self.renew, session)
        self._sessions[session.id] = session
        return session

    async def _reclaim_connectionless(self) -> None:
        idle = [s for s in self._sessions.values() if s.kind in CONNECTIONLESS_KINDS and not s.busy and not s.attached]
        if idle:
            victim = min(idle, key=lambda s: s.last_active)
            log.warning("server full: closing idle %s session %s for a connected client", victim.kind, victim.id)
            await self.close(victim.id, reason="Session reclaimed: the server was full and a connected client needed its slot")

    async def renew(self, session: Session) -> None:
        """Give ``session`` a fresh environment from the factory while its old one still runs an
        abandoned call: the old one is closed once that call returns, its result discarded."""
        old, pending = session.env, session.pending
        session.env = await self.build_env()
        session.pending = None
        await self.dispose(old, owned=True, pending=pending)

    def any_env(self) -> Any:
        """The environment of some open session, or ``None``."""
        return next((s.env for s in self._sessions.values()), None)

    async def build_env(self) -> Any:
        """Build one environment with the factory (not counted as a session); raises FactoryError."""
        try:
            if inspect.iscoroutinefunction(self.factory):
                return await self.factory()
            return await asyncio.get_running_loop().run_in_executor(self.executor, self.factory)
        except Exception as exc:  # the author's factory failed: report it, keep serving
            log.exception("environment factory failed")
            raise FactoryError(f"Could not create the environment: {safe_error_text(exc)}") from None

    async def close(self, session_id: str, reason: str | None = None) -> None:
        """Close a session and its environment; unknown ids are ignored.

        ``reason`` is passed to the session's ``on_close`` hook (e.g. to tell a WebSocket peer).
        """
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.deadline.cancel()
            if reason and session.on_close is not None:
                session.on_close(reason)
            await self.dispose(session.env, owned=session.owned, pending=session.pending)

    async def dispose(self, env: Any, *, owned: bool = True, pending: Any = None) -> None:
        """Close an environment built by the factory (not a shared instance)."""
        if not owned:
            return
        try:
            if Environment.overrides(env, "close_async"):
                await asyncio.wait_for(env.close_async(), timeout=30)
            elif hasattr(env, "close"):
                if pending is not None and not pending.done():
                    # A timed-out step still runs in a thread: close once it returns.
                    pending.add_done_callback(lambda _f: self.executor.submit(env.close))
                else:
                    await asyncio.get_running_loop().run_in_executor(self.executor, env.close)
        except Exception:
            log.exception("environment close failed")

    async def close_all(self) -> None:
        for session_id in list(self._sessions):
            await self.close(session_id)

    # -- idle reaping ---------------------------------------------------------------------

    def start_reaper(self) -> None:
        if self.idle_timeout_s and self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_loop())

    async def stop_reaper(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            try:
                await self._reaper
            except asyncio.CancelledError:
                pass
            self._reaper = None

    async def _reap_loop(self) -> None:
        assert self.idle_timeout_s
        interval = max(0.05, min(self.idle_timeout_s / 4, 5.0))
        while True:
            await asyncio.sleep(interval)
            await self.reap_idle()

    async def reap_idle(self) -> list[str]:
        """Close sessions idle longer than the timeout (never one with a request in flight)."""
        if not self.idle_timeout_s:
            return []
        cutoff = time.monotonic() - self.idle_timeout_s
        stale = [s.id for s in self._sessions.values() if s.last_active < cutoff and not s.busy]
        for session_id in stale:
            log.info("reaping idle session %s", session_id)
            await self.close(session_id, reason=f"Session closed after {self.idle_timeout_s:g} s idle")
        return stale
