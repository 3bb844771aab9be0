"""Raw ``sqlite3`` SQL for appending step rows (the recording hot path), shared by the store and
the journal committer. Every function runs inside the caller's transaction.

Entries: a step row is the ``step`` table's columns in order (``STEP_COLUMNS``), already
serialised; a ``WireStep`` is a step as its wire texts and the reward and done the client parsed
(SQLite's JSON functions pick the other columns out of the texts inside the insert: no parsing in
Python); an episode end is a dict ``{"episode_id", "end", "t"}``; an ``Insert`` is a row of
another table (a run, an episode, the reset step that does not count as a step). Appending
applies the inserts first, then the steps (keeping the episode's ``step_count``/``total_reward``
current and ending it on a ``done`` row), then the ends.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Sequence
from typing import Any, NamedTuple

import orjson

__all__ = ["STEP_COLUMNS", "Insert", "WireStep", "append", "append_new", "classify", "replay", "reply_outcome", "wire_row"]

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


# the step row from its wire texts (?3 the step request, ?4 the reply), as ``wire_row`` computes it
_INSERT_WIRE = f"""INSERT OR IGNORE INTO step ({STEP_COLUMNS}) VALUES (?1, ?2,
 nullif(?3 -> '$.data', 'null'),
 coalesce(json_remove(?4 -> '$.data.observation', '$.reward', '$.done', '$.metadata'), 'null'),
 ?5, ?6, nullif(nullif(?4 -> '$.data.metadata', '{{}}'), 'null'), ?7, ?8, NULL)"""
_WIRE_SQL = sqlite3.sqlite_version_info >= (3, 38, 0)  # the -> and ->> operators
_TABLES = frozenset(("env_run", "episode", "step"))
_LIFTED = ("reward", "done", "metadata")


class Insert(NamedTuple):
    """A row for ``table`` (``env_run``, ``episode`` or ``step``), inserted unless already there."""

    table: str
    row: dict[str, Any]


class WireStep(NamedTuple):
    """A step as it crossed the wire: the step request and the server's reply, JSON texts, with
    the reward and done the client parsed from the reply."""

    episode_id: str  # the fields in the order of ``_INSERT_WIRE``'s parameters
    idx: int
    request: str
    reply: str
    reward: float | None  # where step rows have them too (``_counters`` reads both alike)
    done: bool
    latency_ms: float
    t: float


def _text(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def wire_row(step: WireStep) -> tuple[Any, ...]:
    """The ``step`` row of a ``WireStep``, computed in Python (what ``_INSERT_WIRE`` does in SQL)."""
    try:
        action = orjson.loads(step.request).get("data")
        data = orjson.loads(step.reply).get("data") or {}
        observation = data.get("observation")
        if isinstance(observation, dict) and ("reward" in observation or "done" in observation or "metadata" in observation):
            observation = {k: v for k, v in observation.items() if k not in _LIFTED}
        metadata = data.get("metadata")
    except (orjson.JSONDecodeError, AttributeError, TypeError):  # never expected: the client parsed it
        marker = {"__openenv_unserializable__": "wire reply", "repr": step.reply[:2000]}
        action, observation, metadata = None, marker, None
    return (step.episode_id, step.idx, None if action is None else _text(action), _text(observation),
            step.reward, step.done, _text(metadata) if metadata else None, step.latency_ms, step.t, None)  # fmt: skip


def reply_outcome(reply: str) -> tuple[float | None, bool]:
    """The reward and done of a step reply text (for journal records that do not carry them)."""
    try:
        data = orjson.loads(reply).get("data") or {}
        reward = data.get("reward")
        return (None if reward is None else float(reward)), data.get("done") is True
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return None, False


class _NotAllNew(Exception):
    """Some rows were in the store already (a journal committed twice): take the careful path."""


def _split(entries: Sequence[Any]) -> tuple[list[Insert], list[Sequence[Any]], list[dict[str, Any]]]:
    """Inserts, steps (rows and ``WireStep``s, in order) and ends."""
    inserts: list[Insert] = []
    steps: list[Any] = []
    ends: list[dict[str, Any]] = []
    for e in entries:
        kind = e.__class__
        (inserts if kind is Insert else ends if kind is dict else steps).append(e)
    return inserts, steps, ends


def _inserts(raw: sqlite3.Connection, inserts: Sequence[Insert]) -> None:
    for table, row in inserts:
        if table not in _TABLES or not all(name.isidentifier() for name in row):
            raise sqlite3.IntegrityError(f"journal insert into {table!r}: not a table or columns of ours")
        names = ", ".join(row)
        marks = ", ".join("?" * len(row))
        raw.execute(f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({marks})", tuple(row.values()))


def _counters(raw: sqlite3.Connection, steps: Sequence[Sequence[Any]]) -> None:
    """One counter update per episode (rewards summed in step order), then the ends of ``done``
    steps (rows and ``WireStep``s alike: episode id, idx, reward and done are in the same places)."""
    per_episode: dict[str, list[Sequence[Any]]] = {}
    for step in steps:
        per_episode.setdefault(step[0], []).append(step)
    for eid, mine in per_episode.items():
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
                raw.execute(_END, (step.t if step.__class__ is WireStep else step[8], "done", True, eid))


def _ends(raw: sqlite3.Connection, ends: Sequence[dict[str, Any]]) -> None:
    for end in ends:  # after the steps: a ``done`` step's end wins over a later close
        raw.execute(_END, (end["t"], end["end"], False, end["episode_id"]))


def append(raw: sqlite3.Connection, entries: Sequence[Any]) -> None:
    """Insert new rows (a clashing index raises ``sqlite3.IntegrityError``) and apply ends (the
    store's own writes: prepared rows, never ``WireStep``s)."""
    inserts, rows, ends = _split(entries)
    _inserts(raw, inserts)
    raw.executemany(_INSERT, rows)
    _counters(raw, rows)
    _ends(raw, ends)


def append_new(raw: sqlite3.Connection, entries: Sequence[Any]) -> int:
    """Like ``append`` but idempotent (what a journal committer needs: a batch may be offered twice,
    and its episode may have been deleted meanwhile). Returns how many rows were new."""
    inserts, steps, ends = _split(entries)
    _inserts(raw, inserts)
    new = _append_all_new(raw, steps) if steps else 0
    if new is None:  # duplicates, or a deleted episode: row by row
        new = replay(raw, [wire_row(s) if isinstance(s, WireStep) else s for s in steps])
    _ends(raw, ends)
    return new


def _append_all_new(raw: sqlite3.Connection, steps: list[Any]) -> int | None:
    """Insert ``steps`` with their counters if every one is new and its episode exists (``None``
    and nothing written otherwise)."""
    episodes = list({s[0] for s in steps})
    found = 0
    for at in range(0, len(episodes), 500):  # well under SQLite's limit on bound variables
        chunk = episodes[at : at + 500]
        sql = f"SELECT COUNT(*) FROM episode WHERE id IN ({', '.join('?' * len(chunk))})"
        found += raw.execute(sql, chunk).fetchone()[0]
    if found != len(episodes):
        return None
    wires = [s for s in steps if s.__class__ is WireStep]
    rows = [s for s in steps if s.__class__ is not WireStep] if len(wires) < len(steps) else []
    if wires and not _WIRE_SQL:
        rows += [wire_row(w) for w in wires]
        wires = []
    before = raw.total_changes
    raw.execute("SAVEPOINT fast")
    try:
        raw.executemany(_INSERT_NEW, rows)
        raw.executemany(_INSERT_WIRE, map(tuple, wires))  # plain tuples bind faster
        if raw.total_changes - before != len(steps):
            raise _NotAllNew
        _counters(raw, steps)
    except (_NotAllNew, sqlite3.IntegrityError, sqlite3.OperationalError) as exc:
        if isinstance(exc, sqlite3.OperationalError) and "json" not in str(exc).lower():
            raise  # busy, full...: the caller's transaction fails as a whole
        raw.execute("ROLLBACK TO fast")
        raw.execute("RELEASE fast")
        return None
    raw.execute("RELEASE fast")
    return len(steps)


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
