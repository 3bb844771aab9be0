"""Raw ``sqlite3`` SQL for appending steps (the recording hot path), shared by the store and
the journal committer. Every function runs inside the caller's transaction.

Entries: a step row is the ``step`` table's columns in order (``STEP_COLUMNS``), already
serialised; a ``WireStep`` is a step as the client journaled it (its ``S`` record: wire texts,
reward, done), stored as is in a ``step_chunk`` row with the other steps of its episode in the
batch (``wire_steps.py``: no JSON work when committing); an episode end is a dict
``{"episode_id", "end", "t"}``; an ``Insert`` is a row of another table (a run, an episode, the
reset step that does not count as a step). Appending applies the inserts first, then the steps
(keeping the episode's ``step_count``/``total_reward`` current and ending it on a ``done`` step),
then the ends.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from . import wire_steps

__all__ = ["STEP_COLUMNS", "Insert", "WireStep", "append", "append_new", "classify", "replay"]

STEP_COLUMNS = "episode_id, idx, action, observation, reward, done, metadata, latency_ms, t, state"
_INSERT = f"INSERT INTO step ({STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_NEW = f"INSERT OR IGNORE INTO step ({STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_BUMP_MAX = (
    "UPDATE episode SET step_count = MAX(step_count, ?),"
    " total_reward = CASE WHEN ? IS NULL THEN total_reward ELSE COALESCE(total_reward, 0) + ? END WHERE id = ?"
)
_SET_COUNTS_MAX = "UPDATE episode SET step_count = MAX(step_count, ?), total_reward = ? WHERE id = ?"
_BUMP_TO = "UPDATE episode SET step_count = MAX(step_count, ?) WHERE id = ?"
_END = "UPDATE episode SET ended_at = ?, end_reason = ?, done = ? WHERE id = ? AND ended_at IS NULL"


_INSERT_CHUNK = "INSERT INTO step_chunk (episode_id, first_idx, last_idx, data) VALUES (?, ?, ?, ?)"
_TOP_ROW = "SELECT MAX(idx) FROM step WHERE episode_id = ?"
_TOP_CHUNK = "SELECT MAX(last_idx) FROM step_chunk WHERE episode_id = ?"
_TABLES = frozenset(("env_run", "episode", "step"))


class Insert(NamedTuple):
    """A row for ``table`` (``env_run``, ``episode`` or ``step``), inserted unless already there."""

    table: str
    row: dict[str, Any]


class WireStep(NamedTuple):
    """A step as the client journaled it: ``record`` is its ``S`` payload (``format.pack_step``)."""

    episode_id: str
    idx: int
    record: bytes
    t: float
    reward: float | None  # where step rows have them too (``_counters`` reads both alike)
    done: bool


class _NotAllNew(Exception):
    """Some rows were in the store already (a journal committed twice): take the careful path."""


def _split(entries: Sequence[Any]) -> tuple[list[Insert], list[WireStep], list[Sequence[Any]], list[dict[str, Any]]]:
    """Inserts, ``WireStep``s, step rows (each in order) and ends, in one pass."""
    inserts: list[Insert] = []
    wires: list[WireStep] = []
    rows: list[Any] = []
    ends: list[dict[str, Any]] = []
    for e in entries:
        kind = e.__class__
        (wires if kind is WireStep else inserts if kind is Insert else ends if kind is dict else rows).append(e)
    return inserts, wires, rows, ends


def _inserts(raw: sqlite3.Connection, inserts: Sequence[Insert]) -> None:
    for table, row in inserts:
        if table not in _TABLES or not all(name.isidentifier() for name in row):
            raise sqlite3.IntegrityError(f"journal insert into {table!r}: not a table or columns of ours")
        names = ", ".join(row)
        marks = ", ".join("?" * len(row))
        raw.execute(f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({marks})", tuple(row.values()))


def _counters(raw: sqlite3.Connection, steps: Sequence[Sequence[Any]]) -> None:
    """``_episode_counters`` for each episode of ``steps`` (rows and ``WireStep``s alike: episode
    id, idx, reward and done are in the same places)."""
    per_episode: dict[str, list[Sequence[Any]]] = {}
    for step in steps:
        per_episode.setdefault(step[0], []).append(step)
    for eid, mine in per_episode.items():
        _episode_counters(raw, eid, mine)


def _episode_counters(raw: sqlite3.Connection, eid: str, mine: Sequence[Sequence[Any]]) -> None:
    """One counter update for an episode's new steps (rewards summed in step order), then its end
    if one of them is ``done``."""
    last = max(step[1] for step in mine)
    rewards = [step[4] for step in mine if step[4] is not None]
    if rewards:
        (total,) = raw.execute("SELECT total_reward FROM episode WHERE id = ?", (eid,)).fetchone()
        for reward in rewards:
            total = (0 if total is None else total) + reward
        raw.execute(_SET_COUNTS_MAX, (last, total, eid))
    else:
        raw.execute(_BUMP_TO, (last, eid))
    for step in mine:
        if step[5]:
            raw.execute(_END, (step[3] if step.__class__ is WireStep else step[8], "done", True, eid))


def _ends(raw: sqlite3.Connection, ends: Sequence[dict[str, Any]]) -> None:
    for end in ends:  # after the steps: a ``done`` step's end wins over a later close
        raw.execute(_END, (end["t"], end["end"], False, end["episode_id"]))


def append(raw: sqlite3.Connection, entries: Sequence[Any]) -> None:
    """Insert new rows (a clashing index raises ``sqlite3.IntegrityError``) and apply ends (the
    store's own writes: prepared rows, never ``WireStep``s)."""
    inserts, wires, rows, ends = _split(entries)
    if wires:
        raise TypeError("append takes prepared step rows; wire steps go through append_new")
    _inserts(raw, inserts)
    raw.executemany(_INSERT, rows)
    _counters(raw, rows)
    _ends(raw, ends)


def append_new(raw: sqlite3.Connection, entries: Sequence[Any]) -> int:
    """Like ``append`` but idempotent (what a journal committer needs: a batch may be offered twice,
    and its episode may have been deleted meanwhile). Returns how many steps were new."""
    inserts, wires, rows, ends = _split(entries)
    _inserts(raw, inserts)
    new = _append_chunks(raw, wires) if wires else 0
    if rows:
        fresh = _append_all_new(raw, rows)
        new += replay(raw, rows) if fresh is None else fresh  # duplicates or a deleted episode: row by row
    _ends(raw, ends)
    return new


def _existing(raw: sqlite3.Connection, episodes: list[str]) -> set[str]:
    """Which of ``episodes`` are in the store."""
    found: set[str] = set()
    for at in range(0, len(episodes), 500):  # well under SQLite's limit on bound variables
        chunk = episodes[at : at + 500]
        sql = f"SELECT id FROM episode WHERE id IN ({', '.join('?' * len(chunk))})"
        found.update(row[0] for row in raw.execute(sql, chunk))
    return found


def _append_chunks(raw: sqlite3.Connection, wires: list[WireStep]) -> int:
    """Store wire steps as chunks, one or a few per episode, with their counters. A step is new if
    its index is above every stored one of its episode (each episode's steps are journaled in
    order), so a batch offered again adds nothing; steps of deleted episodes are dropped."""
    per_episode: dict[str, list[WireStep]] = {}
    for w in wires:
        per_episode.setdefault(w[0], []).append(w)
    existing = _existing(raw, list(per_episode))
    new = 0
    for eid, mine in per_episode.items():
        if eid not in existing:
            continue
        top = max(raw.execute(_TOP_ROW, (eid,)).fetchone()[0] or 0, raw.execute(_TOP_CHUNK, (eid,)).fetchone()[0] or 0)
        if mine[0][1] <= top:  # offered before (a replay, or a retried batch): only what is above
            mine = [w for w in mine if w[1] > top]
            if not mine:
                continue
        for part in _parts(mine):
            raw.execute(_INSERT_CHUNK, (eid, part[0][1], part[-1][1], b"".join(w[2] for w in part)))
        _episode_counters(raw, eid, mine)
        new += len(mine)
    return new


def _parts(steps: list[WireStep]) -> Iterator[list[WireStep]]:
    """``steps`` cut into chunks of at most ``MAX_CHUNK_STEPS`` steps and about ``MAX_CHUNK_BYTES``."""
    if len(steps) <= wire_steps.MAX_CHUNK_STEPS and sum(len(w[2]) for w in steps) <= wire_steps.MAX_CHUNK_BYTES:
        yield steps  # the usual case: one chunk
        return
    part: list[WireStep] = []
    size = 0
    for w in steps:
        if part and (len(part) >= wire_steps.MAX_CHUNK_STEPS or size + len(w[2]) > wire_steps.MAX_CHUNK_BYTES):
            yield part
            part, size = [], 0
        part.append(w)
        size += len(w[2])
    if part:
        yield part


def _append_all_new(raw: sqlite3.Connection, rows: list[Any]) -> int | None:
    """Insert step ``rows`` with their counters if every one is new and its episode exists
    (``None`` and nothing written otherwise)."""
    episodes = list({r[0] for r in rows})
    if len(_existing(raw, episodes)) != len(episodes):
        return None
    before = raw.total_changes
    raw.execute("SAVEPOINT fast")
    try:
        raw.executemany(_INSERT_NEW, rows)
        if raw.total_changes - before != len(rows):
            raise _NotAllNew
        _counters(raw, rows)
    except (_NotAllNew, sqlite3.IntegrityError):
        raw.execute("ROLLBACK TO fast")
        raw.execute("RELEASE fast")
        return None
    raw.execute("RELEASE fast")
    return len(rows)


def replay(raw: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> int:
    """Insert the rows not in the store yet, row by row, with their episode's counters; rows of
    deleted episodes are dropped. Returns how many were new."""
    existing = _existing(raw, list({values[0] for values in rows}))
    new = 0
    for values in rows:
        eid, idx, reward, done, t = values[0], values[1], values[4], values[5], values[8]
        if eid not in existing or raw.execute(_INSERT_NEW, tuple(values)).rowcount != 1:
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
