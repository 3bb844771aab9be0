"""Capture sessions: one per rollout, told apart by the API key the harness sends (the session id).

``POST /sessions`` mints an id (``s`` + 24 hex, or one the caller names); the harness uses it as its
API key (``Authorization: Bearer``, ``x-api-key`` or ``x-goog-api-key``), so pointing a harness at
the proxy changes only its base URL and key. An unknown key is refused unless the registry was
made with ``require_registered=False`` (then a session is opened for it).
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .graph import RolloutGraph

__all__ = ["CaptureSession", "SessionRegistry", "api_key_of", "clean_session_id", "harness_session_of"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
RESERVED_METADATA = frozenset({"session_id", "upstream", "capture_level", "max_model_calls", "sampling", "purpose",
                               "eval_sampling"})


def clean_session_id(value: Any) -> str | None:
    """``value`` when it is a usable session id (letters, digits, ``_.-``; up to 128), else None."""
    return value.strip() if isinstance(value, str) and _ID.fullmatch(value.strip()) else None


def api_key_of(headers: dict[str, str]) -> str | None:
    """The key a client sent, wherever its SDK puts it."""
    lower = {k.lower(): v for k, v in headers.items()}
    auth = lower.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return lower.get("x-api-key") or lower.get("x-goog-api-key")


def harness_session_of(headers: dict[str, str], body: dict[str, Any]) -> str | None:
    """The harness's own conversation id, when it sends one (recorded, never used for routing)."""
    lower = {k.lower(): v for k, v in headers.items()}
    for value in (lower.get("x-session-id"), lower.get("proxy-x-session-id"), body.get("_session_id"), body.get("user")):
        if clean_session_id(value):
            return clean_session_id(value)
    return None


@dataclass
class CaptureSession:
    """One rollout's calls: the graph, findings, counters, and where it is recorded."""

    session_id: str
    created_at: float = field(default_factory=time.time)
    graph: RolloutGraph = field(default_factory=RolloutGraph)
    metadata: dict[str, Any] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    last_turn_at: float | None = None
    upstream_errors: int = 0
    purpose: str = "auto"
    model_calls: int = 0
    max_model_calls: int = 0
    budget_stop_count: int = 0
    episode_id: str | None = None
    engine: Any = None  # the upstreams.Engine it named at creation; None: the server's own
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def over_budget(self) -> bool:
        return self.max_model_calls > 0 and self.model_calls >= self.max_model_calls

    @property
    def idle_seconds(self) -> float:
        return time.time() - (self.last_turn_at or self.created_at)


class SessionRegistry:
    """Thread-safe map of session id -> ``CaptureSession``."""

    def __init__(self, *, require_registered: bool = True) -> None:
        self._sessions: dict[str, CaptureSession] = {}
        self._lock = threading.Lock()
        self.require_registered = require_registered

    def create(self, session_id: str | None = None, *, purpose: str = "auto", max_model_calls: int = 0,
               **metadata: Any) -> CaptureSession:
        if type(max_model_calls) is not int or max_model_calls < 0:
            raise ValueError("max_model_calls must be a non-negative integer")
        if purpose not in ("auto", "eval", "train"):
            raise ValueError("purpose must be auto, eval, or train")
        sid = clean_session_id(session_id) or f"s{secrets.token_hex(12)}"
        with self._lock:
            session = self._sessions.get(sid) or CaptureSession(session_id=sid)
            session.metadata.update(metadata)
            session.purpose = purpose
            if max_model_calls:
                session.max_model_calls = max_model_calls
            self._sessions[sid] = session
        return session

    def get(self, session_id: str | None) -> CaptureSession | None:
        if not session_id:
            return None
        with self._lock:
            return self._sessions.get(session_id)

    def resolve(self, headers: dict[str, str]) -> CaptureSession | None:
        """The session a request belongs to (by its API key), or None: refuse it."""
        key = api_key_of(headers)
        session = self.get(key)
        if session is not None or self.require_registered:
            return session
        return self.create(key)

    def list_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._sessions)

    def delete(self, session_id: str) -> bool:
        with self._lock:
            return self._sessions.pop(session_id, None) is not None

    def summary(self) -> list[dict[str, Any]]:
        with self._lock:
            sessions = list(self._sessions.values())
        return [{"session_id": s.session_id, "turns": s.graph.stats()["n_turns"], "roots": s.graph.stats()["n_roots"],
                 "idle_s": round(s.idle_seconds, 1), "upstream_errors": s.upstream_errors, **s.metadata}
                for s in sessions]
