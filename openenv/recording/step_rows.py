"""Step rows and the SQL that appends them (the hot path of recording).

A row is the ``step`` table's columns in order, already serialised; ``sqlite_append`` writes
rows with pre-written qmark SQL on the driver connection, ``core_append`` does the same through
SQLAlchemy for other dialects. Both also keep the episode's ``step_count``/``total_reward``
current and end the episode on ``done``, in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from .jsonable import dumps

__all__ = [
    "END_EPISODE",
    "core_append",
    "insert_first_step",
    "make_step_row",
    "sqlite_append",
    "sqlite_replay",
]

_COLUMNS = "episode_id, idx, action, observation, reward, done, metadata, latency_ms, t, state"
_INSERT = text(
    f"INSERT INTO step ({_COLUMNS}) VALUES "
    "(:episode_id, :idx, :action, :observation, :reward, :done, :metadata, :latency_ms, :t, :state)"
)
_BUMP = text("UPDATE episode SET step_count = :idx WHERE id = :episode_id")
_BUMP_REWARD = text(
    "UPDATE episode SET step_count = :idx, total_reward = COALESCE(total_reward, 0) + :reward WHERE id = :episode_id"
)
END_EPISODE = text(
    "UPDATE episode SET ended_at = :t, end_reason = :reason, done = :done"
    " WHERE id = :episode_id AND ended_at IS NULL"
)
_Q_INSERT = f"INSERT INTO step ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_Q_BUMP = "UPDATE episode SET step_count = ? WHERE id = ?"
_Q_SET_COUNTS = "UPDATE episode SET step_count = ?, total_reward = ? WHERE id = ?"
_Q_INSERT_NEW = f"INSERT OR IGNORE INTO step ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_Q_BUMP_MAX = (
    "UPDATE episode SET step_count = MAX(step_count, ?),"
    " total_reward = CASE WHEN ? IS NULL THEN total_reward ELSE COALESCE(total_reward, 0) + ? END WHERE id = ?"
)
_Q_END = "UPDATE episode SET ended_at = ?, end_reason = ?, done = ? WHERE id = ? AND ended_at IS NULL"


def make_step_row(
    episode_id: str, idx: int, action: Any, observation: Any, reward: Any, done: bool, metadata: Any,
    latency_ms: float | None, t: float, state: Any,
) -> dict[str, Any]:  # fmt: skip
    """The ``step`` row (column order matters: ``sqlite_append`` and the journal use the values in order)."""
    return {
        "episode_id": episode_id,
        "idx": idx,
        "action": None if action is None else dumps(action),
        "observation": dumps(observation),
        "reward": None if reward is None else float(reward),
        "done": bool(done),
        "metadata": dumps(metadata) if metadata else None,
        "latency_ms": latency_ms,
        "t": t,
        "state": None if state is None else dumps(state),
    }


def sqlite_append(raw: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Append ``rows`` on the driver connection, in the caller's transaction: one ``executemany``
    and one counter update per episode (rewards summed in step order, as step-by-step updates
    would), the end of every episode a row finishes, then queued ends (``{"end": reason}``)."""
    ends = [row for row in rows if "end" in row]  # queued episode ends (``journal_end``)
    if ends:
        rows = [row for row in rows if "end" not in row]
    raw.executemany(_Q_INSERT, [tuple(row.values()) for row in rows])
    per_episode: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        per_episode.setdefault(row["episode_id"], []).append(row)
    for eid, mine in per_episode.items():
        rewards = [row["reward"] for row in mine if row["reward"] is not None]
        if rewards:
            (total,) = raw.execute("SELECT total_reward FROM episode WHERE id = ?", (eid,)).fetchone()
            for reward in rewards:
                total = (0 if total is None else total) + reward
            raw.execute(_Q_SET_COUNTS, (mine[-1]["idx"], total, eid))
        else:
            raw.execute(_Q_BUMP, (mine[-1]["idx"], eid))
        for row in mine:
            if row["done"]:
                raw.execute(_Q_END, (row["t"], "done", True, eid))
    for end in ends:  # after the steps: a ``done`` step's end wins over a later close
        raw.execute(_Q_END, (end["t"], end["end"], False, end["episode_id"]))


def sqlite_replay(raw: Any, rows: Sequence[tuple[Any, ...]]) -> int:
    """Insert journal rows (column values in order) not in the store yet, with their episode's
    counters, inside the caller's transaction; rows of deleted episodes are dropped. Returns how
    many were new."""
    exists: dict[str, bool] = {}
    new = 0
    for values in rows:
        eid, idx, reward, done, t = values[0], values[1], values[4], values[5], values[8]
        if eid not in exists:
            exists[eid] = raw.execute("SELECT 1 FROM episode WHERE id = ?", (eid,)).fetchone() is not None
        if not exists[eid] or raw.execute(_Q_INSERT_NEW, values).rowcount != 1:
            continue
        new += 1
        raw.execute(_Q_BUMP_MAX, (idx, reward, reward, eid))
        if done:
            raw.execute(_Q_END, (t, "done", True, eid))
    return new


def core_append(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Append ``rows`` through SQLAlchemy (PostgreSQL and other dialects)."""
    for row in rows:
        bump = {"idx": row["idx"], "reward": row["reward"], "episode_id": row["episode_id"]}
        conn.execute(_INSERT, row)
        conn.execute(_BUMP if row["reward"] is None else _BUMP_REWARD, bump)
        if row["done"]:
            conn.execute(
                END_EPISODE, {"t": row["t"], "reason": "done", "done": True, "episode_id": row["episode_id"]}
            )


def insert_first_step(conn: Connection, row: dict[str, Any]) -> None:
    """Insert a reset row (step 0) without touching the episode's counters."""
    conn.execute(_INSERT, row)
