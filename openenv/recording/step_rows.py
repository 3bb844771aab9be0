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

from openenv.stepjournal import sqlite_steps

from .jsonable import dumps

__all__ = [
    "END_EPISODE",
    "add_token_counts",
    "core_append",
    "insert_first_step",
    "make_step_row",
    "sqlite_append",
]

_COLUMNS = sqlite_steps.STEP_COLUMNS
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
    """Append ``rows`` (and queued ends ``{"episode_id", "end", "t"}``) on the driver connection,
    in the caller's transaction (``stepjournal.sqlite_steps.append``)."""
    sqlite_steps.append(raw, [row if "end" in row else tuple(row.values()) for row in rows])


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


def add_token_counts(conn: Connection, episode_id: str, prompt: int | None, completion: int | None,
                     old: Sequence[int | None] | None = None) -> None:
    """Add a model turn's token counts to its episode's, less those of the turn it replaces (``old``)."""

    def delta(new: int | None, was: int | None) -> int | None:
        return None if new is None and was is None else (new or 0) - (was or 0)

    was = tuple(old) if old is not None else (None, None)
    sql = sqlite_steps.token_sql(delta(prompt, was[0]), delta(completion, was[1]))
    if sql is not None:
        conn.execute(text(sql.replace("?", ":episode_id")), {"episode_id": episode_id})
