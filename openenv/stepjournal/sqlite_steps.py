"""Raw ``sqlite3`` SQL for appending steps (the recording hot path), shared by the store and
the journal committer. Every function runs inside the caller's transaction.

Entries: a step row is the ``step`` table's columns in order (``STEP_COLUMNS``), already
serialised; a ``WireBatch`` is one episode's steps of a journal batch as the client journaled
them (their ``S`` records: wire texts, reward, done), stored as they are in a ``step_chunk`` row
(``wire_steps.py``: no JSON work when committing); an episode end is a dict
``{"episode_id", "end", "t"}``; an ``Insert`` is a row of another table (a run, an episode, the
reset step that does not count as a step). Appending applies the inserts first, then the steps
(keeping the episode's ``step_count``/``total_reward`` current and ending it on a ``done`` step),
then the ends.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator, Sequence
from functools import reduce
from operator import add
from typing import Any, NamedTuple

from . import format as fmt
from . import wire_steps

__all__ = ["STEP_COLUMNS", "Insert", "WireBatch", "append", "append_new", "classify", "replay", "token_sql"]

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
_TABLES = frozenset(("env_run", "episode", "step", "step_agent"))
_STEP_HEAD = fmt.STEP_HEAD


class Insert(NamedTuple):
    """A row for ``table`` (``env_run``, ``episode``, ``step`` or ``step_agent``), inserted unless
    already there."""

    table: str
    row: dict[str, Any]


class WireBatch:
    """An episode's steps of one journal batch as the client journaled them: ``records`` are their
    ``S`` payloads (``format.pack_step``) in index order, ``rewards`` the rewards among them, in
    order, and ``done_t`` the time of the first ``done`` step (``add`` reads all that from a
    payload's fixed head)."""

    __slots__ = ("episode_id", "records", "rewards", "first", "last", "done_t")

    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id
        self.records: list[bytes] = []
        self.rewards: list[float] = []
        self.first = self.last = 0
        self.done_t: float | None = None

    def add(self, record: bytes) -> None:
        """Append one ``S`` payload of this episode (the committer inlines this for speed)."""
        _, _, flags, idx, t, _, reward, _, _ = _STEP_HEAD.unpack_from(record)
        if not self.records:
            self.first = idx
        self.records.append(record)
        self.last = idx
        if flags & fmt.HAS_REWARD:
            self.rewards.append(reward)
        if flags >= fmt.DONE and self.done_t is None:
            self.done_t = t

    def above(self, top: int) -> WireBatch:
        """The steps with an index above ``top`` (what is new when part of a batch is stored)."""
        rest = WireBatch(self.episode_id)
        for record in self.records:
            if _index(record) > top:
                rest.add(record)
        return rest


def _index(record: bytes) -> int:
    return _STEP_HEAD.unpack_from(record)[3]


class _NotAllNew(Exception):
    """Some rows were in the store already (a journal committed twice): take the careful path."""


def _split(entries: Sequence[Any]) -> tuple[list[Insert], list[WireBatch], list[Sequence[Any]], list[dict[str, Any]]]:
    """Inserts, ``WireBatch``es, step rows (each in order) and ends, in one pass."""
    inserts: list[Insert] = []
    wires: list[WireBatch] = []
    rows: list[Any] = []
    ends: list[dict[str, Any]] = []
    for e in entries:
        kind = e.__class__
        (wires if kind is WireBatch else inserts if kind is Insert else ends if kind is dict else rows).append(e)
    return inserts, wires, rows, ends


def token_sql(prompt: int | None, completion: int | None) -> str | None:
    """The ``UPDATE episode`` adding a model turn's token counts to its episode's (``None``: nothing
    to add); its one (qmark) parameter is the episode id."""
    sets = [f"{name} = COALESCE({name}, 0) + {int(n)}"
            for name, n in (("prompt_tokens", prompt), ("completion_tokens", completion)) if n is not None]
    return f"UPDATE episode SET {', '.join(sets)} WHERE id = ?" if sets else None


def _inserts(raw: sqlite3.Connection, inserts: Sequence[Insert]) -> None:
    for table, row in inserts:
        if table not in _TABLES or not all(name.isidentifier() for name in row):
            raise sqlite3.IntegrityError(f"journal insert into {table!r}: not a table or columns of ours")
        names = ", ".join(row)
        marks = ", ".join("?" * len(row))
        new = raw.execute(f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({marks})", tuple(row.values())).rowcount
        if table == "step_agent" and new == 1:  # a model turn's tokens count on its episode (schema 6)
            sql = token_sql(row.get("prompt_tokens"), row.get("completion_tokens"))
            if sql is not None:
                raw.execute(sql, (row["episode_id"],))


def _counters(raw: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> None:
    """``_set_counters`` for each episode of the step ``rows``."""
    per_episode: dict[str, list[Sequence[Any]]] = {}
    for row in rows:
        per_episode.setdefault(row[0], []).append(row)
    for eid, mine in per_episode.items():
        done_t = next((row[8] for row in mine if row[5]), None)
        _set_counters(raw, eid, max(row[1] for row in mine), [row[4] for row in mine if row[4] is not None], done_t)


def _set_counters(raw: sqlite3.Connection, eid: str, last: int, rewards: list[float], done_t: float | None) -> None:
    """One counter update for an episode's new steps (the highest index ``last``; ``rewards`` added
    in step order, one by one), then its end if one of them was ``done`` (at ``done_t``)."""
    if rewards:
        (total,) = raw.execute("SELECT total_reward FROM episode WHERE id = ?", (eid,)).fetchone()
        raw.execute(_SET_COUNTS_MAX, (last, reduce(add, rewards, 0 if total is None else total), eid))
    else:
        raw.execute(_BUMP_TO, (last, eid))
    if done_t is not None:
        raw.execute(_END, (done_t, "done", True, eid))


def _ends(raw: sqlite3.Connection, ends: Sequence[dict[str, Any]]) -> None:
    for end in ends:  # after the steps: a ``done`` step's end wins over a later close
        raw.execute(_END, (end["t"], end["end"], False, end["episode_id"]))


def append(raw: sqlite3.Connection, entries: Sequence[Any]) -> None:
    """Insert new rows (a clashing index raises ``sqlite3.IntegrityError``) and apply ends (the
    store's own writes: prepared rows, never ``WireBatch``es)."""
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


def _append_chunks(raw: sqlite3.Connection, batches: list[WireBatch]) -> int:
    """Store wire steps as chunks, one or a few per episode, with their counters. A step is new if
    its index is above every stored one of its episode (each episode's steps are journaled in
    order), so a batch offered again adds nothing; steps of deleted episodes are dropped."""
    existing = _existing(raw, list({b.episode_id for b in batches}))
    new = 0
    for batch in batches:
        eid = batch.episode_id
        if eid not in existing or not batch.records:
            continue
        top = max(raw.execute(_TOP_ROW, (eid,)).fetchone()[0] or 0, raw.execute(_TOP_CHUNK, (eid,)).fetchone()[0] or 0)
        if batch.first <= top:  # offered before (a replay, or a retried batch): only what is above
            batch = batch.above(top)
            if not batch.records:
                continue
        for first, last, data in _parts(batch):
            raw.execute(_INSERT_CHUNK, (eid, first, last, data))
        _set_counters(raw, eid, batch.last, batch.rewards, batch.done_t)
        new += len(batch.records)
    return new


def _parts(batch: WireBatch) -> Iterator[tuple[int, int, bytes]]:
    """``(first_idx, last_idx, data)`` of the chunks ``batch`` is cut into: at most
    ``MAX_CHUNK_STEPS`` steps and about ``MAX_CHUNK_BYTES`` each."""
    records = batch.records
    if len(records) <= wire_steps.MAX_CHUNK_STEPS and sum(map(len, records)) <= wire_steps.MAX_CHUNK_BYTES:
        yield batch.first, batch.last, b"".join(records)  # the usual case: one chunk
        return
    part: list[bytes] = []
    size = 0
    for record in records:
        if part and (len(part) >= wire_steps.MAX_CHUNK_STEPS or size + len(record) > wire_steps.MAX_CHUNK_BYTES):
            yield _index(part[0]), _index(part[-1]), b"".join(part)
            part, size = [], 0
        part.append(record)
        size += len(record)
    if part:
        yield _index(part[0]), _index(part[-1]), b"".join(part)


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
