"""Schema version check, creation and migrations.

The version lives in ``recording_meta`` (key ``schema_version``). Opening a store:
a fresh database gets the current tables; an older one is migrated step by step inside one
write transaction; a newer one is refused with ``SchemaVersionError`` before anything is written.
A migration is ``MIGRATIONS[n](conn)``, taking version ``n`` to ``n + 1``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlalchemy import inspect, select, text, tuple_
from sqlalchemy.engine import Connection

from .errors import SchemaVersionError, StoreCorruptError
from .jsonable import loads
from .models import (
    READ_INDEXES,
    EnvRun,
    Episode,
    EpisodeTag,
    RecordingMeta,
    Step,
    StepAgent,
    StepChunk,
    TrainingRun,
)
from .tokens import turn_counts, unpack

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "TABLES", "ensure_schema", "read_version"]

SCHEMA_VERSION = 6
TABLES = [
    t.__table__
    for t in (RecordingMeta, EnvRun, TrainingRun, Episode, EpisodeTag, Step, StepChunk, StepAgent)
]


def _add_step_chunks(conn: Connection) -> None:
    """1 -> 2: the ``step_chunk`` table (wire steps stored as journaled)."""
    StepChunk.__table__.create(conn, checkfirst=True)


def _add_fork_columns(conn: Connection) -> None:
    """2 -> 3: ``episode.parent_episode_id`` / ``fork_step`` (forks) and their index; the same
    ``ALTER TABLE ... ADD COLUMN`` on SQLite and PostgreSQL (nullable, so existing rows need no rewrite)."""
    have = {c["name"] for c in inspect(conn).get_columns("episode")}
    if "parent_episode_id" not in have:
        conn.execute(text("ALTER TABLE episode ADD COLUMN parent_episode_id VARCHAR(32)"))
    if "fork_step" not in have:
        conn.execute(text("ALTER TABLE episode ADD COLUMN fork_step INTEGER"))
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_episode_parent ON episode (parent_episode_id)"))


def _add_step_agents(conn: Connection) -> None:
    """3 -> 4: the ``step_agent`` table (who acted; a model's prompt and completion)."""
    StepAgent.__table__.create(conn, checkfirst=True)


_TRAINING_COLUMNS = (
    ("training_run_id", "VARCHAR(32)"), ("train_step", "INTEGER"), ("group_id", "VARCHAR(64)"),
    ("group_index", "INTEGER"), ("finish_reason", "VARCHAR(32)"), ("trainer_reward", "FLOAT"),
    ("reward_components", "TEXT"), ("advantage", "FLOAT"),
)


def _add_training_runs(conn: Connection) -> None:
    """4 -> 5: the ``training_run`` table, an episode's run/step/group/reward columns and their
    index, and ``step_agent.tokens`` (packed token arrays); nullable columns, no row rewritten."""
    TrainingRun.__table__.create(conn, checkfirst=True)
    have = {c["name"] for c in inspect(conn).get_columns("episode")}
    for name, sql_type in _TRAINING_COLUMNS:
        if name not in have:
            conn.execute(text(f"ALTER TABLE episode ADD COLUMN {name} {sql_type}"))
    conn.execute(text(
        "CREATE INDEX IF NOT EXISTS ix_episode_training "
        "ON episode (training_run_id, train_step, group_id, group_index)"
    ))
    for index in READ_INDEXES:
        index.create(conn, checkfirst=True)
    if "tokens" not in {c["name"] for c in inspect(conn).get_columns("step_agent")}:
        blob = "BYTEA" if conn.dialect.name == "postgresql" else "BLOB"
        conn.execute(text(f"ALTER TABLE step_agent ADD COLUMN tokens {blob}"))


_BACKFILL_BATCH = 500


def _add_token_counts(conn: Connection) -> None:
    """5 -> 6: ``prompt_tokens``/``completion_tokens`` on ``step_agent`` (a turn's) and ``episode``
    (summed over its turns), filled for the model turns already stored (read once, in batches)."""
    for table in ("step_agent", "episode"):
        have = {c["name"] for c in inspect(conn).get_columns(table)}
        for name in ("prompt_tokens", "completion_tokens"):
            if name not in have:
                conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} INTEGER"))
    a = StepAgent.__table__.c
    after: tuple[str, int] = ("", -1)
    touched: set[str] = set()
    while True:
        rows = conn.execute(select(a.episode_id, a.idx, a.data, a.tokens).where(
            a.actor == "model", tuple_(a.episode_id, a.idx) > after).order_by(a.episode_id, a.idx)
            .limit(_BACKFILL_BATCH)).all()  # fmt: skip
        if not rows:
            break
        after = (rows[-1][0], rows[-1][1])
        updates = []
        for eid, idx, data, blob in rows:
            try:
                prompt, completion = turn_counts(unpack(loads(data) if data else None, blob))
            except ValueError:  # a damaged blob or JSON: the turn stays uncounted
                continue
            if prompt is not None or completion is not None:
                updates.append({"e": eid, "i": idx, "p": prompt, "c": completion})
                touched.add(eid)
        if updates:
            conn.execute(text("UPDATE step_agent SET prompt_tokens = :p, completion_tokens = :c "
                              "WHERE episode_id = :e AND idx = :i"), updates)
    sums = ("UPDATE episode SET prompt_tokens = (SELECT SUM(s.prompt_tokens) FROM step_agent s WHERE s.episode_id = :e),"
            " completion_tokens = (SELECT SUM(s.completion_tokens) FROM step_agent s WHERE s.episode_id = :e) WHERE id = :e")
    ids = sorted(touched)
    for at in range(0, len(ids), _BACKFILL_BATCH):
        conn.execute(text(sums), [{"e": e} for e in ids[at : at + _BACKFILL_BATCH]])


MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _add_step_chunks,
    2: _add_fork_columns,
    3: _add_step_agents,
    4: _add_training_runs,
    5: _add_token_counts,
}
_PG_LOCK_KEY = 0x6F70656E656E76  # "openenv": serialises concurrent schema set-up on PostgreSQL


def read_version(conn: Connection) -> int | None:
    """The stored schema version, or ``None`` for a database without our tables."""
    names = set(inspect(conn).get_table_names())
    if RecordingMeta.__tablename__ not in names:
        ours = {t.name for t in TABLES} & names
        if ours:
            raise StoreCorruptError(
                f"tables {sorted(ours)} exist but no schema version is recorded; refusing to touch them"
            )
        return None
    row = conn.execute(
        select(RecordingMeta.value).where(RecordingMeta.key == "schema_version")
    ).scalar_one_or_none()
    if row is None or not str(row).isdigit():
        raise StoreCorruptError(f"recording_meta holds no valid schema_version ({row!r})")
    return int(row)


def ensure_schema(
    conn: Connection,
    *,
    target: int = SCHEMA_VERSION,
    migrations: Mapping[int, Callable[[Connection], None]] = MIGRATIONS,
) -> int:
    """Create or migrate the schema to ``target`` inside the caller's write transaction."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
    version = read_version(conn)
    if version is None:
        for table in TABLES:
            table.create(conn, checkfirst=True)
        conn.execute(RecordingMeta.__table__.insert(), {"key": "schema_version", "value": str(target)})
        return target
    if version > target:
        raise SchemaVersionError(
            f"the store has schema version {version}, newer than this release supports ({target}); "
            "upgrade OpenEnv Studio to open it",
            found=version,
            supported=target,
        )
    for step in range(version, target):
        if step not in migrations:
            raise SchemaVersionError(f"no migration from schema version {step}", found=version)
        migrations[step](conn)
    if version != target:
        conn.execute(
            RecordingMeta.__table__.update()
            .where(RecordingMeta.__table__.c.key == "schema_version")
            .values(value=str(target))
        )
    return target
