"""Who acted, and a model's turn, in the episode store: SQLite (journaled and not), PostgreSQL,
a schema-2 store upgraded, deletion."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from openenv.recording import SCHEMA_VERSION, EpisodeStore
from openenv.recording.schema import read_version
from openenv.rollout import ModelEndpoint, Rollout, RolloutSettings
from tests.recording.conftest import pg_url  # noqa: F401 - the PostgreSQL fixture


def _rollout(echo_url: str, model_url: str, store: EpisodeStore) -> Rollout:
    r = Rollout(echo_url, ModelEndpoint(model_url, model="echo"), store,
                RolloutSettings(episodes=2, concurrency=2, max_steps=3))  # fmt: skip
    asyncio.run(r.run())
    return r


@pytest.mark.parametrize("journal", [True, False])
def test_turns_on_sqlite(echo_url: str, model_url: str, tmp_path: Path, journal: bool) -> None:
    with EpisodeStore(tmp_path / "e.db", journal=journal) as store:
        r = _rollout(echo_url, model_url, store)
        for res in r.results:
            steps = store.load_steps(res.episode_id)
            assert [s.actor for s in steps] == [None, "model", "model", "model"]
            assert store.load_steps(res.episode_id, start=2, limit=1)[0].agent["completion"] == '{"message":"m2"}'
        assert store.delete_episodes([r.results[0].episode_id]) == 1
        assert store.load_turns(r.results[0].episode_id) == {}
        assert len(store.load_turns(r.results[1].episode_id)) == 3


def test_turns_on_postgres(echo_url: str, model_url: str, pg_url: str) -> None:  # noqa: F811
    with EpisodeStore(pg_url) as store:
        r = _rollout(echo_url, model_url, store)
        steps = store.load_steps(r.results[0].episode_id)
        assert [s.actor for s in steps] == [None, "model", "model", "model"]
        assert steps[3].agent["messages"][0]["role"] == "system"


def test_a_schema_2_store_gains_the_turn_table(echo_url: str, model_url: str, tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with EpisodeStore(db) as store:
        _rollout(echo_url, model_url, store)
    con = sqlite3.connect(db)
    con.execute("DROP TABLE step_agent")
    con.execute("UPDATE recording_meta SET value = '2' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with EpisodeStore(db) as store:
        assert store.write(read_version) == SCHEMA_VERSION == 6
        r = _rollout(echo_url, model_url, store)
        assert store.load_steps(r.results[0].episode_id)[1].actor == "model"
