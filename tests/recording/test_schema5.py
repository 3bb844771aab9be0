"""Schema 5: a version-4 store gains training runs, an episode's run/step/group columns and packed
token arrays when it is opened, keeping every episode and step it had."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import inspect

from openenv.recording import EpisodeStore
from openenv.recording.models import READ_INDEXES
from openenv.recording.schema import SCHEMA_VERSION, read_version

NEW_EPISODE_COLUMNS = {"training_run_id", "train_step", "group_id", "group_index", "finish_reason",
                       "trainer_reward", "reward_components", "advantage"}


def _downgrade_to_4(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("DROP INDEX ix_episode_training")
    for index in READ_INDEXES:
        con.execute(f"DROP INDEX {index.name}")
    for column in sorted(NEW_EPISODE_COLUMNS):
        con.execute(f"ALTER TABLE episode DROP COLUMN {column}")
    con.execute("ALTER TABLE step_agent DROP COLUMN tokens")
    con.execute("DROP TABLE training_run")
    con.execute("UPDATE recording_meta SET value = '4' WHERE key = 'schema_version'")
    con.commit()
    con.close()


def test_a_version_4_store_gains_the_training_columns_and_keeps_its_episodes(tmp_path: Path) -> None:
    db = tmp_path / "v4.db"
    with EpisodeStore(db) as s:
        run = s.create_run(env_name="echo")
        eid = s.start_episode(run, observation={"x": 1})
        s.append_step(eid, 1, action={"m": "a"}, observation={"x": 2}, reward=1.0)
    _downgrade_to_4(db)
    with EpisodeStore(db) as s:
        assert s.write(read_version) == SCHEMA_VERSION == 6
        columns = {c["name"] for c in inspect(s.engine).get_columns("episode")}
        assert NEW_EPISODE_COLUMNS <= columns
        assert "tokens" in {c["name"] for c in inspect(s.engine).get_columns("step_agent")}
        assert "training_run" in inspect(s.engine).get_table_names()
        episode = s.get_episode(eid)
        assert episode.step_count == 1 and episode.training_run_id is None and episode.train_step is None
        assert [x.index for x in s.load_steps(eid)] == [0, 1]
