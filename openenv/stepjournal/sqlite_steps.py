"""Raw ``sqlite3`` SQL for appending step rows (the recording hot path), shared by the store and
the journal committer. Every function runs inside the caller's transaction.

Entries: a step row is the ``step`` table's columns in order (``STEP_COLUMNS``), already
serialised; an episode end is a dict ``{"episode_id", "end", "t"}``; an ``Insert`` is a row of
another table (a run, an episode, the reset step that does not count as a step). Appending
applies the inserts first, then the steps (keeping the episode's ``step_count``/``total_reward``
current and ending it on a ``done`` row), then the ends.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["STEP_COLUMNS", "Insert", "append", "append_new", "classify", "replay"]

STEP_COLUMNS = "episode_id, idx, action, observation, reward, done, metadata, latency_ms, t, state"
_INSERT = f"INSERT INTO step ({STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_NEW = f"INSERT OR IGNORE INTO step ({STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_BUMP = "UPDATE episode SET step_count = ? WHERE id = ?"
_SET_COUNTS = "UPDATE episode SET step_count = ?, total_reward = ? WHERE id = ?"
_BUMP_MAX = (
    "UPDATE episode SET step_count = MAX(step_count, ?),"
    " total_reward = CASE WHEN ? IS NULL THEN total_reward ELSE COALESCE(total_reward, 0) + ? END WHERE id = ?"
)
_END = "UPDATE episode SET ended_at = ?, end_reason = ?, done = ? WHERE id = ? AND ended_at IS NULL"


_TABLES = frozenset(("env_run", "episode", "step"))


class Insert(NamedTuple):
    """A row for ``table`` (``env_run``, ``episode`` or ``step``), inserted unless already there."""

    table: str
    row: dict[str, Any]


class _NotAllNew(Exception):
    """Some rows were in the store already (a journal committed twice): take the careful path."""


def _split(entries: Sequence[Any]) -> tuple[list[Insert], list[Sequence[Any]], list[dict[str, Any]]]:
    inserts = [e for e in entries if isinstance(e, Insert)]
    ends = [e for e in entries if isinstance(e, dict)]
    rows = [e for e in entries if not isinstance(e, (Insert, dict))]
    return inserts, rows, ends


def _inserts(raw: sqlite3.Connection, inserts: Sequence[Insert]) -> None:
    for table, row in inserts:
        if table not in _TABLES or not all(name.isidentifier() for name in row):
            raise sqlite3.IntegrityError(f"journal insert into {table!r}: not a table or columns of ours")
        names = ", ".join(row)
        marks = ", ".join("?" * len(row))
        raw.execute(f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({marks})", tuple(row.values()))


def _counters(raw: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> None:
    """One counter update per episode (rewards summed in step order), then the ends of ``done`` rows."""
    per_episode: dict[str, list[Sequence[Any]]] = {}
    for row in rows:
        per_episode.setdefault(row[0], []).append(row)
    for eid, mine in per_episode.items():
        rewards = [row[4] for row in mine if row[4] is not None]
        if rewards:
            (total,) = raw.execute("SELECT total_reward FROM episode WHERE id = ?", (eid,)).fetchone()
            for reward in rewards:
                total = (0 if total is None else total) + reward
            raw.execute(_SET_COUNTS, (mine[-1][1], total, eid))
        else:
            raw.execute(_BUMP, (mine[-1][1], eid))
        for row in mine:
            if row[5]:
                raw.execute(_END, (row[8], "done", True, eid))


def _ends(raw: sqlite3.Connection, ends: Sequence[dict[str, Any]]) -> None:
    for end in ends:  # after the steps: a ``done`` step's end wins over a later close
        raw.execute(_END, (end["t"], end["end"], False, end["episode_id"]))


def append(raw: sqlite3.Connection, entries: Sequence[Any]) -> None:
    """Insert new rows (a clashing index raises ``sqlite3.IntegrityError``) and apply ends."""
    inserts, rows, ends = _split(entries)
    _inserts(raw, inserts)
    raw.executemany(_INSERT, rows)
    _counters(raw, rows)
    _ends(raw, ends)


def append_new(raw: sqlite3.Connection, entries: Sequence[Any]) -> int:
    """Like ``append`` but idempotent (what a journal committer needs: a batch may be offered twice,
    and its episode may have been deleted meanwhile). Returns how many rows were new."""
    inserts, rows, ends = _split(entries)
    _inserts(raw, inserts)
    before = raw.total_changes
    try:
        raw.execute("SAVEPOINT fast")
        raw.executemany(_INSERT_NEW, rows)
        if raw.total_changes - before != len(rows):
            raise _NotAllNew
        _counters(raw, rows)
        raw.execute("RELEASE fast")
    except (_NotAllNew, sqlite3.IntegrityError):  # duplicates, or a deleted episode (foreign key)
        raw.execute("ROLLBACK TO fast")
        raw.execute("RELEASE fast")
        new = replay(raw, rows)
    else:
        new = len(rows)
    _ends(raw, ends)
    return new


def replay(raw: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> int:
    """Insert the rows not in the store yet, row by row, with their episode's counters; rows of
    deleted episodes are dropped. Returns how many were new."""
    exists: dict[str, bool] = {}
    new = 0
    for values in rows:
        eid, idx, reward, done, t = values[0], values[1], values[4], values[5], values[8]
        if eid not in exists:
            exists[eid] = raw.execute("SELECT 1 FROM episode WHERE id = ?", (eid,)).fetchone() is not None
        if not exists[eid] or raw.execute(_INSERT_NEW, tuple(values)).rowcount != 1:
            continue
        new += 1
        raw.execute(_BUMP_MAX, (idx, reward, reward, eid))
        if done:
            raw.execute(_END, (t, "done", True, eid))
    return new


def classify(exc: BaseException) -> str:
    """The store error code for a foreign (``sqlite3``/``OSError``/driver) error."""
    low = str(exc).lower()
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "STORE_FULL"
    if "database or disk is full" in low or "no space left" in low or "disk full" in low:
        return "STORE_FULL"
    if "file is not a database" in low or "malformed" in low or "not a database" in low:
        return "STORE_CORRUPT"
    if "database is locked" in low or "database is busy" in low or "database table is locked" in low:
        return "STORE_BUSY"
    if "unable to open database" in low:
        return "STORE_OPEN"
    return "RECORDING_ERROR"
