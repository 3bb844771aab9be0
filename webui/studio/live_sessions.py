"""A running environment's open sessions, read from its ``GET /sessions`` (kind, idle time,
episode, steps, busy) and closed with ``DELETE /sessions/{id}``.

A session idle for longer than ``stale_s`` (the ``stale_session_s`` setting) and not busy is flagged: its client most likely
vanished (a closed laptop, a killed script, an HTTP client that never closed its session), and
it holds a slot until the server's idle timeout reaps it, if it has one. Closing it frees the slot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

__all__ = ["LiveSession", "SessionsView", "close_session", "read_sessions"]

TIMEOUT_S = 3.0


@dataclass
class LiveSession:
    id: str
    kind: str
    idle_s: float
    episode_id: str | None
    step_count: int
    done: bool
    busy: bool
    stale_s: float = 60.0

    @property
    def stale(self) -> bool:
        return not self.busy and self.idle_s > self.stale_s


@dataclass
class SessionsView:
    """What the runtime page shows: the gauge, the rows, or why they could not be read."""

    active: int = 0
    max: int | None = None
    idle_timeout_s: float | None = None
    sessions: list[LiveSession] = field(default_factory=list)
    error: str = ""
    stale_s: float = 60.0

    @property
    def fill(self) -> float:
        return min(1.0, self.active / self.max) if self.max else 0.0

    @property
    def stale(self) -> int:
        return sum(1 for s in self.sessions if s.stale)


def _num(value: Any, default: float = 0.0) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _session(raw: dict[str, Any], stale_s: float) -> LiveSession | None:
    sid = raw.get("session_id")
    if not isinstance(sid, str) or not sid:
        return None
    episode = raw.get("episode_id")
    return LiveSession(id=sid, kind=str(raw.get("kind") or "?"), idle_s=_num(raw.get("idle_s")),
                       episode_id=episode if isinstance(episode, str) else None,
                       step_count=int(_num(raw.get("step_count"))), done=raw.get("done") is True,
                       busy=raw.get("busy") is True, stale_s=stale_s)  # fmt: skip


async def read_sessions(base_url: str, *, stale_s: float = 60.0, headers: dict[str, str] | None = None) -> SessionsView:
    """The server's ``/sessions``, most idle first; ``error`` says why when it cannot be read."""
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=False, headers=headers) as http:
            resp = await http.get(base_url.rstrip("/") + "/sessions")
    except httpx.HTTPError as exc:
        return SessionsView(error=f"could not reach {base_url}/sessions ({type(exc).__name__})")
    if resp.status_code in (404, 405):
        return SessionsView(error="This server does not list its sessions (it has no /sessions endpoint).")
    if resp.status_code != 200:
        return SessionsView(error=f"{base_url}/sessions answered HTTP {resp.status_code}")
    try:
        data = resp.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return SessionsView(error=f"{base_url}/sessions did not answer a JSON object")
    rows = [s for s in (_session(r, stale_s) for r in data.get("sessions") or [] if isinstance(r, dict)) if s]
    rows.sort(key=lambda s: -s.idle_s)
    maximum = data.get("max")
    timeout = data.get("idle_timeout_s")
    return SessionsView(active=int(_num(data.get("active"), len(rows))),
                        max=int(maximum) if isinstance(maximum, int) and not isinstance(maximum, bool) else None,
                        idle_timeout_s=_num(timeout) if isinstance(timeout, (int, float)) else None, sessions=rows,
                        stale_s=stale_s)  # fmt: skip


async def close_session(base_url: str, session_id: str, headers: dict[str, str] | None = None) -> str:
    """Close one session on the server; '' when closed (or already gone), else what went wrong."""
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=False, headers=headers) as http:
            resp = await http.delete(base_url.rstrip("/") + "/sessions/" + quote(session_id, safe=""))
    except httpx.HTTPError as exc:
        return f"could not reach {base_url} ({type(exc).__name__})"
    if resp.status_code in (200, 204, 404):
        return ""
    return f"closing session {session_id[:8]} answered HTTP {resp.status_code}"
