"""Play sessions: a browser tab stepping a running env through the studio's recorder.

Each session is a ``GenericEnvClient`` wrapped by ``record(..., source="human")``: a step is
durable in the store's journal before its observation is returned (and so before it is shown),
and every read of the store in this process sees it (``docs/episode-format.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from openenv.core import GenericEnvClient, OpenEnvError
from openenv.core.errors import ActionValidationError
from openenv.recording import EpisodeStore, fork, record
from webui.env_views import field_help
from webui.forms import Node, build_form
from webui.mcp_panel import flat_observation
from webui.studio.errors import NotFoundError, PlayError
from webui.studio.play_state import (
    CLOSED,
    DONE,
    IDLE,
    LOST_CODES,
    MODEL,
    STEPPING,
    Controls,
    controls,
    refusal,
)
from webui.web_sessions import WebSession

__all__ = ["RESET_SCHEMA", "PlaySession", "PlaySessions", "reset_schema", "session_call"]

MAX_PLAY_SESSIONS = 64
SEED_BOUNDS = (-(2**63), 2**63 - 1)  # the store's seed column: SQLite INTEGER, Parquet int64
PLAY_HISTORY = 20  # rows in the Play page's history; the episode page has every step
RESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "seed": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "default": None,
                 "title": "Seed"},
        "episode_id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Episode id"},
    },
}


def reset_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The env's reset parameters from its ``/schema`` (its ``reset`` key, the same schema its own
    ``/web`` page builds the reset form from); seed and episode id for a server without it."""
    reset = (schema or {}).get("reset")
    if isinstance(reset, dict) and isinstance(reset.get("properties"), dict):
        return reset
    return RESET_SCHEMA


@dataclass(eq=False)
class PlaySession:
    """One tab's recorded connection to one runtime."""

    id: str
    runtime_id: str
    env_name: str
    base_url: str
    client: Any
    action_node: Node
    reset_node: Node
    web: WebSession
    obs_help: dict[str, str] = field(default_factory=dict)
    obs_schema: dict[str, Any] | None = None
    state_schema: dict[str, Any] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)
    fork: Any = None  # an ``openenv.recording.Fork`` while this session plays a fork
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # the runtime's (a bearer token)
    closed: str | None = None  # why, once closed (the tab, the studio, or the env server ended it)
    model_playing: bool = False  # a takeover is running (webui/studio/model_runs.py)
    busy: int = 0  # calls in flight
    last_episode_id: str | None = None  # the episode it recorded last (kept once it is closed)
    seen: float = field(default_factory=time.monotonic)  # the last request from a page showing it

    def _settled(self) -> str:
        """The phase once the calls in flight are over."""
        if self.closed is not None:
            return CLOSED
        if self.model_playing:
            return MODEL
        latest = self.web.latest
        return DONE if latest is not None and latest.done and self.episode_id is not None else IDLE

    @property
    def phase(self) -> str:
        """Where the state machine is (``webui.studio.play_state``): the server's truth."""
        settled = self._settled()
        return STEPPING if self.busy and settled in (IDLE, DONE) else settled

    @property
    def controls(self) -> Controls:
        return controls(self.phase, self.episode_id is not None)

    def check(self, what: str) -> None:
        """Raise the ``PlayRefusedError`` for a human ``what`` that the phase refuses (call it
        holding ``lock``: a call queued behind another sees what that one left)."""
        exc = refusal(self._settled(), self.episode_id is not None, what, self.closed)
        if exc is not None:
            raise exc

    @property
    def forked_from(self) -> tuple[str, int] | None:
        """(parent episode id, fork step) when this session's episode is a fork."""
        f = self.fork
        return (f.report.parent_id, f.report.fork_step) if f is not None and f.report.episode_id == self.episode_id else None

    @property
    def episode_id(self) -> str | None:
        return self.client.episode_id


def _payload(result: Any) -> dict[str, Any]:
    obs = result.observation
    return {"observation": obs, "reward": result.reward, "done": bool(result.done),
            "metadata": getattr(result, "metadata", None) or None}


class PlaySessions:
    """Open play sessions, reaped when idle, closed at shut-down."""

    def __init__(self, store: EpisodeStore, *, idle_s: float) -> None:
        self.store = store
        self.idle_s = idle_s
        self._items: OrderedDict[str, PlaySession] = OrderedDict()
        self._pending: set[asyncio.Task[None]] = set()  # delayed closes of detached pages

    async def open(self, runtime_id: str, name: str, base_url: str, *, provider: str | None,
                   headers: dict[str, str] | None = None) -> PlaySession:
        """Connect to ``base_url`` (a fresh env session, sending ``headers``) and read its action schema."""
        await self.reap()
        headers = dict(headers or {})
        try:
            async with httpx.AsyncClient(timeout=5.0, trust_env=False, headers=headers) as http:
                resp = await http.get(base_url.rstrip("/") + "/schema")
                resp.raise_for_status()
                schema = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise PlayError(f"could not read {base_url}/schema: {type(exc).__name__}: {exc}") from exc
        inner = GenericEnvClient(base_url=base_url, headers=headers)
        try:
            await inner.connect()
        except OpenEnvError as exc:
            raise PlayError(f"could not open a session on {base_url}: {exc.message}") from exc
        schema = schema if isinstance(schema, dict) else {}
        obs_schema = schema.get("observation") if isinstance(schema.get("observation"), dict) else None
        client = record(inner, store=self.store, source="human", label="studio",
                        provider=None if provider == "url" else provider,
                        info={"observation_schema": obs_schema} if obs_schema else None)
        ps = PlaySession(
            id=uuid.uuid4().hex[:16], runtime_id=runtime_id, env_name=name, base_url=base_url, client=client,
            action_node=build_form((schema or {}).get("action") or {}), reset_node=build_form(reset_schema(schema)),
            web=WebSession(id="", history=deque(maxlen=PLAY_HISTORY)), obs_help=field_help(obs_schema or {}),
            obs_schema=obs_schema, state_schema=schema.get("state") if isinstance(schema.get("state"), dict) else None,
            headers=headers,
        )
        ps.web.id = ps.id
        self._items[ps.id] = ps
        while len(self._items) > MAX_PLAY_SESSIONS:
            _, old = self._items.popitem(last=False)
            if old.closed is None:
                await _close_quietly(old)
        return ps

    def find(self, sid: str, runtime_id: str) -> PlaySession | None:
        """The open session ``sid`` on ``runtime_id``, if there is one."""
        ps = self._items.get(sid)
        if ps is None or ps.runtime_id != runtime_id:
            return None
        return self.get(sid)

    def get(self, sid: str) -> PlaySession:
        ps = self.peek(sid)
        ps.last_used = time.monotonic()
        self._items.move_to_end(sid)
        return ps

    def peek(self, sid: str) -> PlaySession:
        """The session ``sid`` for a page's status poll: marks it seen, not used (idle reaping goes on)."""
        ps = self._items.get(sid)
        if ps is None:
            raise NotFoundError("This play session has ended (idle too long, closed, or the studio restarted).",
                                what="play session")
        ps.seen = time.monotonic()
        return ps

    def detach(self, sid: str, grace_s: float) -> None:
        """A page showing ``sid`` went away (closed, reloaded, Back): close the session after
        ``grace_s`` unless a page (the reloaded one, another tab) asks for it meanwhile."""
        ps = self._items.get(sid)
        if ps is None or ps.closed is not None:
            return
        left = time.monotonic()

        async def later() -> None:
            await asyncio.sleep(grace_s)
            if ps.seen <= left and ps.closed is None and not ps.model_playing:
                await self.close(sid, "its page was closed")

        task = asyncio.get_running_loop().create_task(later())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def reset(self, ps: PlaySession, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Reset ``ps`` with ``kwargs``; a seed the store cannot hold is an ``ActionValidationError``."""
        seed = kwargs.get("seed")
        if isinstance(seed, int) and not SEED_BOUNDS[0] <= seed <= SEED_BOUNDS[1]:
            msg = f"a seed must fit in 64 bits (at most {SEED_BOUNDS[1]})"
            raise ActionValidationError(msg, errors=[{"loc": ["seed"], "msg": msg, "type": "value_error"}])
        ps.check("reset")
        async with session_call(ps):
            ps.check("reset")
            started = time.perf_counter()
            result = await ps.client.reset(**{k: v for k, v in kwargs.items() if v is not None})
            payload = _payload(result)
            ps.web.record("reset", kwargs, payload, (time.perf_counter() - started) * 1000)
        return payload

    async def step(self, ps: PlaySession, action: dict[str, Any]) -> dict[str, Any]:
        """One human step; refused (``PlayRefusedError``, nothing sent or recorded) before Reset,
        after ``done``, while the model plays and once the session is closed."""
        ps.check("step")
        async with session_call(ps):
            ps.check("step")
            started = time.perf_counter()
            result = await ps.client.step(action)
            ps.client.record_turn("human")  # who acted (a model may take over: webui/studio/model_runs.py)
            payload = _payload(result)
            ps.web.record("step", action, payload, (time.perf_counter() - started) * 1000)
        return payload

    async def end(self, ps: PlaySession) -> None:
        """End the episode now (recorded with reason ``ended``); the session stays open for a Reset.
        Refused as a step is (before Reset, after done, while the model plays, once closed)."""
        ps.check("step")
        async with session_call(ps):
            ps.check("step")
            await asyncio.to_thread(ps.client.end_episode, "ended")  # the next step needs a Reset

    async def state(self, ps: PlaySession) -> Any:
        """The session's current state (``None`` before the first reset)."""
        if ps.episode_id is None or ps.closed is not None:
            return None
        async with ps.lock:
            state = await ps.client.state()
        return state if isinstance(state, dict) else getattr(state, "__dict__", state)

    async def web_view(self, ps: PlaySession) -> dict[str, Any]:
        """The env's own view of the session's latest observation (``EnvClient.web_view``); empty
        before the first reset and for a server without the hooks."""
        latest = ps.web.latest
        if ps.episode_id is None or latest is None or ps.closed is not None:
            return {"html": None, "actions": [], "problem": None}
        async with ps.lock:
            return await ps.client.web_view(flat_observation(latest.payload))

    async def fork(self, ps: PlaySession, episode_id: str, step: int) -> Any:
        """Fork ``episode_id`` at ``step`` on this session (``openenv.recording.fork``): its replayed
        steps fill the history; stops at the first divergence (then ``proceed`` replays the rest)."""
        def seen(recorded: Any, result: Any) -> None:
            kind = "reset" if recorded.index == 0 else "step"
            ps.web.record(kind, recorded.action if kind == "step" else {}, _payload(result), recorded.latency_ms or 0.0)

        async with session_call(ps):
            ps.fork = await fork(self.store, episode_id, ps.client, step=step, on_result=seen)
        return ps.fork

    async def proceed(self, ps: PlaySession) -> Any:
        """Replay what a divergence left of the session's fork, up to its fork step."""
        if ps.fork is None:
            raise PlayError("this play session is not forking an episode")
        async with session_call(ps):
            return await ps.fork.proceed()

    async def close(self, sid: str, reason: str = "closed from the studio") -> None:
        """Close a session; it stays listed as closed (its page says so) until reaped."""
        ps = self._items.get(sid)
        if ps is not None and ps.closed is None:
            ps.closed = reason
            await _close_quietly(ps)

    async def forget(self, sid: str) -> None:
        ps = self._items.pop(sid, None)
        if ps is not None and ps.closed is None:
            await _close_quietly(ps)

    async def close_for_runtime(self, runtime_id: str) -> None:
        for sid in [s for s, p in self._items.items() if p.runtime_id == runtime_id]:
            await self.close(sid, "its environment was stopped or restarted")

    async def reap(self) -> None:
        """Close sessions idle for ``idle_s`` (a page still showing one then says it is closed);
        forget closed ones no page has polled for a minute."""
        now = time.monotonic()
        for sid, ps in list(self._items.items()):
            if ps.closed is None and now - ps.last_used > self.idle_s and not ps.model_playing:
                await self.close(sid, f"idle for over {self.idle_s:g} s")
            elif ps.closed is not None and now - ps.last_used > self.idle_s and now - ps.seen > 60:
                await self.forget(sid)

    async def close_all(self) -> None:
        for task in list(self._pending):
            task.cancel()
        for sid in list(self._items):
            await self.forget(sid)

    def __len__(self) -> int:
        return len(self._items)


@contextlib.asynccontextmanager
async def session_call(ps: PlaySession) -> AsyncIterator[None]:
    """Hold the session's lock for one call (``stepping`` meanwhile); the env server ending the
    session (DELETE /sessions/{id}, its idle reaper, a restart) closes the play session."""
    ps.busy += 1
    try:
        async with ps.lock:
            try:
                yield
            except OpenEnvError as exc:
                if exc.code in LOST_CODES and ps.closed is None:
                    ps.closed = ("the environment server ended it: closed from its sessions list, "
                                 "reaped when idle, or restarted")
                    await _close_quietly(ps)
                    ps.check("step")  # the refusal of a closed session, nothing recorded
                raise
    finally:
        ps.busy -= 1
        ps.last_episode_id = ps.episode_id or ps.last_episode_id


async def _close_quietly(ps: PlaySession) -> None:
    ps.last_episode_id = ps.episode_id or ps.last_episode_id
    try:
        await ps.client.close()
    except OpenEnvError:
        pass  # the env server is already gone; the episode was ended ("closed") in the store
