"""Fixtures: a fresh SQLite store, a fresh PostgreSQL database, and a store on either."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.recording import EpisodeStore
from tests._require import require

PG_ADMIN = os.environ.get("OPENENV_TEST_PG_URL", "postgresql://openenv:openenv@127.0.0.1:55432/openenv_test")


def _pg_connect(dbname: str | None = None):  # noqa: ANN202 - psycopg is an optional extra
    import psycopg

    url = PG_ADMIN if dbname is None else PG_ADMIN.rsplit("/", 1)[0] + f"/{dbname}"
    return psycopg.connect(url, connect_timeout=3, autocommit=True)


def pg_available() -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    try:
        with _pg_connect():
            return True
    except psycopg.Error:
        return False


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database, dropped afterwards."""
    require(pg_available(), f"PostgreSQL at {PG_ADMIN} (scripts/system/50-postgres.sh)")
    name = f"openenv_t_{uuid.uuid4().hex[:12]}"
    with _pg_connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with _pg_connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "episodes.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[EpisodeStore]:
    s = EpisodeStore(db_path)
    yield s
    s.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodeStore]:
    """The same store API on SQLite and on PostgreSQL."""
    target = tmp_path / "any.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = EpisodeStore(target)
    yield s
    s.close()


def fill(
    store: EpisodeStore,
    *,
    env: str = "echo",
    label: str | None = None,
    episodes: int = 1,
    steps: int = 3,
    source: str = "programmatic",
    done: bool = True,
) -> list[str]:
    """Record ``episodes`` simple episodes; returns their ids (oldest first)."""
    run = store.create_run(env_name=env, label=label, source=source, base_url="http://127.0.0.1:1")
    ids = []
    for e in range(episodes):
        eid = store.start_episode(run, reset_kwargs={"seed": e}, observation={"echoed_message": "", "n": 0})
        for i in range(1, steps + 1):
            store.append_step(
                eid,
                i,
                action={"message": f"m{i}"},
                observation={"echoed_message": f"m{i}", "n": i},
                reward=float(i),
                done=done and i == steps,
                latency_ms=0.5,
            )
        ids.append(eid)
    return ids


def hold_write_lock(db_path: Path, seconds: float) -> threading.Thread:
    """Another connection takes the database's write lock and keeps it for ``seconds`` (no commit
    can happen meanwhile); join the returned thread to wait for the release."""
    taken = threading.Event()

    def hold() -> None:
        con = sqlite3.connect(db_path, isolation_level=None)
        con.execute("BEGIN IMMEDIATE")
        taken.set()
        time.sleep(seconds)
        con.execute("COMMIT")
        con.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(10)
    return thread


def stored_steps(con: sqlite3.Connection, episode_id: str) -> int:
    """How many steps of an episode are in the database, as another process sees it: ``step``
    rows and the steps of ``step_chunk`` rows (decoded, not estimated from the index range)."""
    from openenv.stepjournal.wire_steps import iter_chunk

    rows = con.execute("SELECT COUNT(*) FROM step WHERE episode_id = ?", (episode_id,)).fetchone()[0]
    chunks = con.execute("SELECT data FROM step_chunk WHERE episode_id = ?", (episode_id,)).fetchall()
    return rows + sum(1 for (data,) in chunks for _ in iter_chunk(data))
