"""Per-tab state kept by the /web page: the episode's step history, bounded in count and memory."""

from __future__ import annotations

import itertools
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

MAX_HISTORY = 100
KEEP_PAYLOADS = 20
KEEP_BYTES = 16 * 1024 * 1024
MAX_WEB_SESSIONS = 512


@dataclass(eq=False)
class Record:
    """One reset or step of the episode, as shown in the history list."""

    index: int
    kind: str
    action: Any
    payload: dict[str, Any] | None
    latency_ms: float
    reward: Any = None
    done: bool = False
    size: int = 0
    at: float = field(default_factory=time.time)


@dataclass(eq=False)
class WebSession:
    """A browser tab: its pool session (once it has reset) and its episode's history."""

    id: str
    pool_id: str | None = None
    history: deque[Record] = field(default_factory=lambda: deque(maxlen=MAX_HISTORY))
    episodes: int = 0
    dropped: int = 0
    last_state: Any = None

    @property
    def latest(self) -> Record | None:
        return self.history[-1] if self.history else None

    def record(self, kind: str, action: Any, payload: dict[str, Any], latency_ms: float) -> Record:
        """Append a reset (which starts a fresh history) or a step."""
        if kind == "reset":
            self.history.clear()
            self.episodes += 1
            self.dropped = 0
        index = self.history[-1].index + 1 if self.history else 0
        if len(self.history) == self.history.maxlen:
            self.dropped += 1
        rec = Record(index=index, kind=kind, action=action, payload=payload, latency_ms=latency_ms,
                     reward=payload.get("reward"), done=bool(payload.get("done")), size=rough_size(payload))
        self.history.append(rec)
        kept = 0
        for i, old in enumerate(reversed(self.history)):
            kept += old.size if old.payload is not None else 0
            if i > 0 and (i >= KEEP_PAYLOADS or kept > KEEP_BYTES):
                old.payload = None
        return rec

    def find(self, index: int) -> Record | None:
        return next((r for r in self.history if r.index == index), None)


def rough_size(value: Any, budget: int = 500) -> int:
    """Approximate in-memory size of a JSON value, counting at most ``budget`` nodes (strings exactly)."""
    total, stack = 0, [value]
    while stack and budget > 0:
        budget -= 1
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            total += 64 * len(item)
            stack.extend(itertools.islice(item.values(), budget))
        elif isinstance(item, list):
            total += 16 * len(item)
            stack.extend(item[:budget])
        else:
            total += 16
    return total


class WebSessions:
    """The tabs this page opened, most recently used last; the oldest is forgotten past the cap."""

    def __init__(self, cap: int = MAX_WEB_SESSIONS) -> None:
        self._items: OrderedDict[str, WebSession] = OrderedDict()
        self.cap = cap

    def add(self, session_id: str) -> WebSession:
        ws = WebSession(id=session_id)
        self._items[session_id] = ws
        while len(self._items) > self.cap:
            self._items.popitem(last=False)
        return ws

    def get(self, session_id: str) -> WebSession | None:
        ws = self._items.get(session_id)
        if ws is not None:
            self._items.move_to_end(session_id)
        return ws

    def drop(self, session_id: str) -> None:
        self._items.pop(session_id, None)

    def release_missing(self, live: set[str]) -> None:
        """Detach tabs whose pool session is gone (closed or reaped); their history stays."""
        for ws in self._items.values():
            if ws.pool_id is not None and ws.pool_id not in live:
                ws.pool_id = None

    def __len__(self) -> int:
        return len(self._items)
